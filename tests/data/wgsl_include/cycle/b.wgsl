// b: includes c, which includes b again
// #include "c.wgsl"
fn b() {}
