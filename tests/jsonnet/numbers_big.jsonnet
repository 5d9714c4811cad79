// {}
// Large numbers: both print them as integers; the same doubles.
[1e21, 1e22, 1e300]
