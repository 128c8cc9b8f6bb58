// a
// #include "b.wgsl"
fn a() {}
