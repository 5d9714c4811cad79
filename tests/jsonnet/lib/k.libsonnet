// A tiny Kubernetes helper library, found through the `lib` search path.
{
  configMap(name, data={}):: {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: name },
    data: data,
  },
  labels(app):: { app: app, 'app.kubernetes.io/name': app },
}
