// {}
local base = { name: 'base', greeting: 'hi ' + self.name, list: [1] };
local child = base { name: 'child', list+: [2] };
{
  inherit: child,
  comprehension: { [k]: std.length(k) for k in ['a', 'bb', 'ccc'] if k != 'bb' },
  arrayComp: [x * y for x in [1, 2] for y in [10, 20]],
  conditional: if std.length([1]) > 0 then 'yes' else 'no',
  assertOk: (assert 1 < 2 : 'never'; 'passed'),
  local f(a, b=2, c=a + b) = [a, b, c],
  calls: [f(1), f(1, 3), f(a=5, c=0)],
  hidden:: 'not shown',
  visible::: 'forced visible',
  superField: { a: 1 } + { a: super.a + 1 },
  inOp: ['a' in { a: 1 }, 'b' in { a: 1 }],
  dollar: { x: 1, y: { z: $.conditional } },
  equality: [[1, { a: 2 }] == [1, { a: 2 }], 1 == 1.0, 'a' < 'b'],
  objectLevel: std.objectFields({ a: 1, [if false then 'b']: 2 }),
}
