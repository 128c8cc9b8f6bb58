// top
fn top() {}

  // #include "nope.wgsl"
