//! Criterion benchmark placeholder replaced in the next commit.
fn main() {}
