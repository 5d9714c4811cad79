// {"tlas": [{"name": "name", "value": "web"}, {"name": "replicas", "value": "3", "code": true}, {"name": "labels", "value": "{ tier: 'front' }", "code": true}]}
function(name, replicas=1, labels={}, unused='default')
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: name, labels: labels },
    spec: { replicas: replicas },
    unused: unused,
  }
