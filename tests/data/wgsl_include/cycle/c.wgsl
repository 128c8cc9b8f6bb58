// c

// #include "b.wgsl"
fn c() {}
