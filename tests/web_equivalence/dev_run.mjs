import {runInBrowser} from './browser.mjs';
const [webRoot, kernelDir, ...modules] = process.argv.slice(2);
const out = await runInBrowser({webRoot, kernelDir, modules});
console.log(JSON.stringify({adapter: out.adapter, features: out.features, errors: out.errors}));
for (const r of out.results)
  console.log(
      r.suite, '|', r.name, '|', r.median.toFixed(3), r.unit, '| speedup', r.speedup?.toFixed(2), '| eq',
      JSON.stringify(r.equivalence));
console.log(JSON.stringify(out.outputs).slice(0, 3000));
