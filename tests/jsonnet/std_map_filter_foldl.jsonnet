// {}
local xs = std.range(1, 10);
{
  squares: std.map(function(x) x * x, xs),
  evens: std.filter(function(x) x % 2 == 0, xs),
  sum: std.foldl(function(acc, x) acc + x, xs, 0),
  concat: std.foldr(function(x, acc) acc + std.toString(x), xs, ''),
  mapWithIndex: std.mapWithIndex(function(i, x) i * x, [5, 6, 7]),
  flatMap: std.flatMap(function(x) [x, x], [1, 2]),
}
