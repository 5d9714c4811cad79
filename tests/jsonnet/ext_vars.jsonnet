// {"extVars": [{"name": "env", "value": "prod"}, {"name": "replicas", "value": "1 + 2", "code": true}, {"name": "cfg", "value": "{ a: [1, 'x'], b: std.length('abc') }", "code": true}, {"name": "quoted", "value": "it's \"q\" $HOME"}]}
{
  env: std.extVar('env'),
  replicas: std.extVar('replicas'),
  cfg: std.extVar('cfg'),
  quoted: std.extVar('quoted'),
}
