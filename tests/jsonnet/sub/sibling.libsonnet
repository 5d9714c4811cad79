{ x: 'from sub/sibling.libsonnet' }
