#!/usr/bin/env python3
"""Writes N Deployment pairs (desired, live) as YAML streams; every 100th live object differs.

Usage: gen.py OUT_DIR [N]. Live objects look like `kubectl get -o yaml` output: defaults,
status, managedFields and the last-applied annotation.
"""
import json, os, sys

out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10000
per_file = 100
os.makedirs(f"{out}/desired", exist_ok=True)
os.makedirs(f"{out}/live", exist_ok=True)

def y(v, ind=0):
    """A small YAML emitter (block style) good enough for these objects."""
    pad = "  " * ind
    if isinstance(v, dict):
        if not v:
            return " {}\n"
        s = "\n"
        for k, x in v.items():
            s += f"{pad}{k}:" + y(x, ind + 1)
        return s
    if isinstance(v, list):
        if not v:
            return " []\n"
        s = "\n"
        for x in v:
            body = y(x, ind + 1)
            s += f"{pad}-" + (" " + body.lstrip(" \n").replace("\n" + "  " * (ind + 1), "\n" + "  " * (ind + 1), 1) if isinstance(x, dict) else body)
        return s
    if v is None:
        return " null\n"
    if isinstance(v, bool):
        return " true\n" if v else " false\n"
    if isinstance(v, (int, float)):
        return f" {v}\n"
    return " " + json.dumps(v) + "\n"

def desired(i):
    name = f"app-{i:05d}"
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": f"team-{i % 50}", "labels": {"app": name, "tier": "backend"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name, "tier": "backend"}},
                                  "spec": {"containers": [{"name": "app", "image": f"registry.example.com/{name}:1.{i % 7}.0",
                                                           "ports": [{"containerPort": 8080, "name": "http"}],
                                                           "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                                                           "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
                                                           "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}}}]}}}}

def live(i):
    d = desired(i)
    last = json.dumps(d, separators=(",", ":"), sort_keys=True)
    l = json.loads(json.dumps(d))
    m = l["metadata"]
    m.update({"annotations": {"deployment.kubernetes.io/revision": "3", "kubectl.kubernetes.io/last-applied-configuration": last},
              "creationTimestamp": "2026-09-21T08:12:44Z", "generation": 3, "resourceVersion": str(100000 + i), "uid": f"00000000-0000-4000-8000-{i:012d}",
              "managedFields": [{"apiVersion": "apps/v1", "fieldsType": "FieldsV1", "manager": "kubectl-client-side-apply", "operation": "Update", "time": "2026-09-21T08:12:44Z",
                                 "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:tier": {}}}, "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}}]})
    s = l["spec"]
    s.update({"progressDeadlineSeconds": 600, "revisionHistoryLimit": 10, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}})
    ps = s["template"]["spec"]
    ps.update({"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30})
    c = ps["containers"][0]
    c.update({"imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"})
    c["ports"][0]["protocol"] = "TCP"
    c["env"][1]["valueFrom"]["fieldRef"]["apiVersion"] = "v1"
    c["readinessProbe"].update({"failureThreshold": 3, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1})
    c["readinessProbe"]["httpGet"]["scheme"] = "HTTP"
    c["resources"]["requests"]["cpu"] = "250m"
    if i % 100 == 0:
        c["env"][0]["value"] = "debug"  # the 1% someone edited by hand
    l["status"] = {"availableReplicas": 2, "observedGeneration": 3, "readyReplicas": 2, "replicas": 2, "updatedReplicas": 2,
                   "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": "2026-09-21T08:13:00Z", "lastUpdateTime": "2026-09-21T08:13:00Z", "message": "Deployment has minimum availability."}]}
    return l

for side, fn in (("desired", desired), ("live", live)):
    for f in range(0, n, per_file):
        with open(f"{out}/{side}/{f // per_file:04d}.yaml", "w") as fh:
            fh.write("---\n".join(y(fn(i)).lstrip("\n") for i in range(f, min(n, f + per_file))))
