// Unbounded recursion: stopped at 500 frames.
local f(n) = f(n + 1) + 1;
f(0)
