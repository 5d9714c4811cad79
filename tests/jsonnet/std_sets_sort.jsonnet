// {}
local people = [{ n: 'b', a: 3 }, { n: 'a', a: 3 }, { n: 'c', a: 1 }];
{
  sort: std.sort([3, 1, 2, 10, -1]),
  sortStrings: std.sort(['b', 'B', 'a', 'ä', '']),
  sortKey: std.sort(people, function(p) p.a),
  uniq: std.uniq([1, 1, 2, 3, 3, 3, 1]),
  set: std.set([3, 1, 3, 2]),
  union: std.setUnion([1, 3], [2, 3]),
  inter: std.setInter([1, 2, 3], [2, 3, 4]),
  diff: std.setDiff([1, 2, 3], [2]),
  member: std.setMember(2, [1, 2, 3]),
  reverse: std.reverse([1, 2, 3]),
}
