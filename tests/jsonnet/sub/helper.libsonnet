// Imported relative to itself: ../data/greeting.txt is tests/jsonnet/data/greeting.txt.
{ greeting: importstr '../data/greeting.txt', sibling: (import 'sibling.libsonnet').x }
