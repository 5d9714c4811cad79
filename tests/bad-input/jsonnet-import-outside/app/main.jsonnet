// Reads a file one level above the repository.
{ kind: 'ConfigMap', metadata: { name: 'x' }, data: { stolen: importstr '../../outside.yaml' } }
