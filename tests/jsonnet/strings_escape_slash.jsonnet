// {}
// `\/` in a double-quoted string: go-jsonnet reads a slash, jrsonnet refuses the escape.
"slash\/ here"
