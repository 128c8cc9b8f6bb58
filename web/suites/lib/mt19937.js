// std::mt19937 and libstdc++'s std::uniform_real_distribution<double> (generate_canonical with
// two 32-bit draws, summed in double), so that the browser draws the same random weights as
// llm::HostWeights::random (src/llm/reference.cpp) for the same seed.

export class Mt19937 {
  constructor(seed) {
    this.mt = new Uint32Array(624);
    this.index = 624;
    this.mt[0] = seed >>> 0;
    for (let i = 1; i < 624; ++i) {
      const prev = this.mt[i - 1] ^ (this.mt[i - 1] >>> 30);
      this.mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
  }

  next() {
    if (this.index >= 624) this.twist();
    let y = this.mt[this.index++];
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  twist() {
    const mt = this.mt;
    for (let i = 0; i < 624; ++i) {
      const y = (mt[i] & 0x80000000) | (mt[(i + 1) % 624] & 0x7fffffff);
      mt[i] = mt[(i + 397) % 624] ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
    }
    this.index = 0;
  }

  // generate_canonical<double, 53>: (u0 + u1 * 2^32) / 2^64 in double, below 1.
  canonical() {
    const sum = this.next() + this.next() * 4294967296;
    const r = sum / 18446744073709551616;
    return r >= 1 ? 1 - 2 ** -53 : r;
  }

  // uniform_real_distribution<double>(lo, hi)
  uniform(lo, hi) { return this.canonical() * (hi - lo) + lo; }
}
