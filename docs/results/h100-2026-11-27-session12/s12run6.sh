# Session 12 run 6: the browser's llm suite (quick) and /chat's cached load on the H100 (issue 25), main 6129582.
source .baseline/s12/common.sh
MODEL=$M5 WGFUSE=$PWD/$D/wgfuse SUITES=llm QUICK=1 OUT=$OUT/b6 bench/baselines/browser_gpu.sh 2>&1 | tail -25
