// {}
{
  ints: [0, -1, 42, 9007199254740992, 1e15, 123456789012345],
  floats: [0.1, 1.5, -2.25, 1 / 3, 2 / 3, 1e-7, 3.14159265358979],
  small: [5e-324, 1e-300],
  arith: [7 % 3, -7 % 3, 7.5 % 2, std.floor(-1.5), std.ceil(1.2), std.round(2.5), std.pow(2, 10)],
  intDiv: [10 / 4, std.floor(10 / 4)],
  bitwise: [5 & 3, 5 | 3, 5 ^ 3, 1 << 10, 1024 >> 3, ~5],
  toString: [std.toString(1.5), std.toString(1e21), std.toString(100), std.toString(0.5)],
  math: [std.sqrt(16), std.abs(-3), std.max(1, 2), std.min(1, 2), std.clamp(5, 1, 3), std.sign(-2)],
}
