// {}
// go-jsonnet formats 1e21 with %g as "10e+20"; jrsonnet as "1e+21" (as C's printf does).
'%g' % 1e21
