// {"fails": true}
{ v: std.extVar('undefined') }
