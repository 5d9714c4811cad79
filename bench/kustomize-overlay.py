#!/usr/bin/env python3
"""Writes a kustomize base of N resources and an overlay of it (bench/render-scale.sh,
bench/controller-1k.sh KUSTOMIZE=1).

Usage: kustomize-overlay.py ROOT N [--namespace NS] [--headless] [--overlay DIR]

ROOT/base: N/4 units of Deployment, Service, ConfigMap and ServiceAccount, the Deployment
referring to the other three by name, in files of 500 documents (res/r-NNNN.yaml).
ROOT/DIR (default overlay): namePrefix prod-, labels with selectors, an image override and one
JSON 6902 patch per Deployment targeted by name; --namespace NS sets a namespace too.
--headless: Services without a cluster IP (thousands of apps on one test bed would exhaust
its service range).
"""
import argparse, os

p = argparse.ArgumentParser()
p.add_argument("root")
p.add_argument("n", type=int)
p.add_argument("--namespace")
p.add_argument("--headless", action="store_true")
p.add_argument("--overlay", default="overlay")
a = p.parse_args()
units, per_file = max(a.n // 4, 1), 500
os.makedirs(f"{a.root}/base/res", exist_ok=True)
os.makedirs(f"{a.root}/{a.overlay}", exist_ok=True)
cluster_ip = "  clusterIP: None\n" if a.headless else ""
docs = []
for i in range(units):
    docs.append(f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}
  labels:
    app: app-{i}
spec:
  replicas: 2
  selector:
    matchLabels:
      app: app-{i}
  template:
    metadata:
      labels:
        app: app-{i}
    spec:
      serviceAccountName: app-{i}
      containers:
      - name: main
        image: registry.example.com/team/app:1.0.{i}
        ports:
        - containerPort: 8080
          name: http
        envFrom:
        - configMapRef:
            name: app-{i}-config
        resources:
          requests:
            cpu: 100m
            memory: 64Mi
      volumes:
      - name: config
        configMap:
          name: app-{i}-config
""")
    docs.append(f"""apiVersion: v1
kind: Service
metadata:
  name: app-{i}
  labels:
    app: app-{i}
spec:
{cluster_ip}  selector:
    app: app-{i}
  ports:
  - port: 80
    targetPort: http
""")
    docs.append(f"""apiVersion: v1
kind: ConfigMap
metadata:
  name: app-{i}-config
data:
  LOG_LEVEL: info
  INDEX: "{i}"
""")
    docs.append(f"""apiVersion: v1
kind: ServiceAccount
metadata:
  name: app-{i}
""")
files = []
for f in range(0, len(docs), per_file):
    name = f"res/r-{f // per_file:04d}.yaml"
    files.append(name)
    with open(f"{a.root}/base/{name}", "w") as fh:
        fh.write("---\n".join(docs[f:f + per_file]))
with open(f"{a.root}/base/kustomization.yaml", "w") as fh:
    fh.write("resources:\n" + "".join(f"- {x}\n" for x in files))
k = ["resources:", "- ../base"]
if a.namespace:
    k.append(f"namespace: {a.namespace}")
k += ["namePrefix: prod-", "labels:", "- pairs:", "    env: prod", "  includeSelectors: true",
      "images:", "- name: registry.example.com/team/app", '  newTag: "2.0"', "patches:"]
for i in range(units):
    k.append(f"- target:\n    kind: Deployment\n    name: app-{i}\n  patch: |-\n"
             f"    - op: replace\n      path: /spec/replicas\n      value: {3 + i % 3}\n"
             f"    - op: add\n      path: /metadata/annotations\n      value:\n        unit: \"{i}\"")
with open(f"{a.root}/{a.overlay}/kustomization.yaml", "w") as fh:
    fh.write("\n".join(k) + "\n")
