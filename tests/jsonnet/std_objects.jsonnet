// {}
local o = { b: 1, a: 2, h:: 'hidden', nested: { z: 1 } };
{
  fields: std.objectFields(o),
  fieldsAll: std.objectFieldsAll(o),
  values: std.objectValues(o),
  has: [std.objectHas(o, 'h'), std.objectHasAll(o, 'h')],
  mergePatch: std.mergePatch({ a: 1, b: { c: 2, d: 3 }, e: [1] }, { b: { c: null, x: 9 }, e: null, f: 'new' }),
  mergePatchScalar: std.mergePatch({ a: 1 }, 'replaced'),
  plus: o + { nested+: { y: 2 } },
  prune: std.prune({ a: null, b: [], c: {}, d: [null, 1], e: { f: null } }),
  keyValues: std.objectKeysValues({ x: 1, y: 2 }),
  get: [std.get(o, 'a'), std.get(o, 'missing', 'default')],
}
