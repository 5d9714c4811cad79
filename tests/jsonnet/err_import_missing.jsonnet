// {"fails": true}
import 'does-not-exist.libsonnet'
