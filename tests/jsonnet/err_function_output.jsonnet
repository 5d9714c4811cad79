// {"fails": true}
{ f: function(x) x }
