#!/usr/bin/env bash
# Renders every kustomize test case with `kubectl kustomize` (the oracle).
#
#   tests/kustomize/           every case must render (non-empty output), must
#                              render identically from a copy of the case dir
#                              (proves it is self-contained), and must satisfy
#                              the feature assertions listed below
#   tests/kustomize-fallback/  every case must render (non-empty output)
#   tests/kustomize-invalid/   every case must FAIL; the error is printed
#
# Usage: tests/kustomize/check.sh [-v] [CASE-SUBSTRING...]
#   -v   print each rendered output / full error
# Env:   KUBECTL (default: kubectl)
# Exit:  0 when everything is as expected, 1 otherwise.
set -u

KUBECTL=${KUBECTL:-kubectl}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTS=$(dirname "$HERE")
VERBOSE=0
FILTERS=()
for a in "$@"; do
  case "$a" in
    -v) VERBOSE=1 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) FILTERS+=("$a") ;;
  esac
done

command -v "$KUBECTL" >/dev/null || { echo "check.sh: $KUBECTL not found" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ---------------------------------------------------------------------------
# Feature assertions for tests/kustomize cases: "CASE<TAB>+|-<TAB>ERE".
# "+" the rendered output must contain a line matching ERE, "-" must not.
# They make sure each case still exercises what its README line says.
ASSERTIONS=$(cat <<'EOF'
01-resources-files	+	^kind: ServiceAccount$
01-resources-files	+	serviceAccountName: web
02-resources-multidoc	+	name: worker-metrics
02-resources-multidoc	+	name: worker-config
03-resources-directory	+	name: shop-redis
03-resources-directory	+	serviceName: shop-redis
04-nested-three-levels	+	value: eu-west-1
04-nested-three-levels	+	namespace: staging-eu
04-nested-three-levels	+	replicas: 2
04-nested-three-levels	+	CURRENCY: EUR
05-resources-alt-kustomization-filenames	+	name: from-yml-dir$
05-resources-alt-kustomization-filenames	+	name: from-capital-dir-cap
06-resources-kind-list	+	name: exported-svc
06-resources-kind-list	-	^kind: List
07-component-basic	+	name: metrics-config-[a-z0-9]{10}$
07-component-basic	+	name: orders-metrics
08-component-shared-by-two-overlays	+	name: blue-tracing-[a-z0-9]{10}$
08-component-shared-by-two-overlays	+	name: green-tracing-[a-z0-9]{10}$
08-component-shared-by-two-overlays	+	track: green
09-component-patch-and-label	+	runAsNonRoot: true
09-component-patch-and-label	+	security.example.com/profile: hardened
10-patches-smp-file	+	memory: 512Mi
10-patches-smp-file	+	cpu: 100m
10-patches-smp-file	+	replicas: 3
11-patches-smp-inline	+	type: LoadBalancer
11-patches-smp-inline	+	NEW_CHECKOUT: "true"
11-patches-smp-inline	-	LEGACY_CART
12-patches-json6902-ops	+	replicas: 4
12-patches-json6902-ops	+	--metrics-port=9090
12-patches-json6902-ops	+	owner: alice
12-patches-json6902-ops	-	OLD_FLAG
13-patches-json6902-append-escape	+	nginx.ingress.kubernetes.io/proxy-body-size: 8m
13-patches-json6902-append-escape	+	example.com/cost-center~legacy: cc-200
13-patches-json6902-append-escape	+	host: m.shop.example.com
13-patches-json6902-append-escape	-	rewrite-target
14-patches-target-group-version	+	priorityClassName: business-critical
14-patches-target-group-version	+	maxReplicas: 20
14-patches-target-group-version	+	patched-by: empty-group-is-wildcard
15-patches-target-name-regex	+	tier: api
15-patches-target-name-regex	+	exact: "yes"
15-patches-target-name-regex	+	queue-consumer: "true"
16-patches-target-namespace	+	REFUNDS_V2: "true"
16-patches-target-namespace	+	REFUNDS_V2: "false"
16-patches-target-namespace	+	billing-domain: "true"
17-patches-target-label-selector	+	replicas: 3
17-patches-target-label-selector	+	canary.example.com/weight: "10"
18-patches-target-annotation-selector	+	type: LoadBalancer
18-patches-target-annotation-selector	+	prometheus.io/port: "9090"
19-patches-one-patch-many-targets	+	pool: general
19-patches-one-patch-many-targets	+	terminationGracePeriodSeconds: 45
20-legacy-patches-strategic-merge-files	+	SMTP_PORT: "587"
20-legacy-patches-strategic-merge-files	+	replicas: 2
21-legacy-patches-strategic-merge-inline	+	storage: 100Gi
21-legacy-patches-strategic-merge-inline	-	ReadWriteOnce
22-legacy-patches-json6902-path	+	concurrencyPolicy: Forbid
22-legacy-patches-json6902-path	+	activeDeadlineSeconds: 3600
23-legacy-patches-json6902-inline	+	name: memory
23-legacy-patches-json6902-inline	+	minReplicas: 3
24-smp-delete-list-element	-	debug-agent
24-smp-delete-list-element	-	DEBUG
24-smp-delete-list-element	-	debug-tools
25-smp-delete-map	-	affinity
25-smp-delete-map	-	limits
25-smp-delete-map	-	disktype
26-smp-replace	-	oauth-proxy
26-smp-replace	-	legacy-tls
26-smp-replace	-	kubernetes.io/os
27-smp-set-element-order	+	\$setElementOrder/containers
27-smp-set-element-order	+	name: thumbnailer
28-smp-retain-keys	+	\$retainKeys
28-smp-retain-keys	+	maxSurge: 1
28-smp-retain-keys	+	type: Recreate
29-smp-delete-from-primitive-list	+	\$deleteFromPrimitiveList/finalizers
29-smp-delete-from-primitive-list	+	- example.com/backup-protection
30-smp-merge-list-order	+	name: BATCH
30-smp-merge-list-order	+	name: audit
31-smp-merge-key-ports	+	name: dns-tcp
31-smp-merge-key-ports	+	name: dns-udp
31-smp-merge-key-ports	+	name: metrics
32-smp-ports-protocol-mismatch	-	hostPort
32-smp-ports-protocol-mismatch	-	targetPort: 8081
33-smp-collapses-duplicate-keys	+	value: -Xmx256m
33-smp-collapses-duplicate-keys	+	name: http-alt
34-smp-merge-keys-volumes-tolerations	+	value: assets-v2
34-smp-merge-keys-volumes-tolerations	-	not-ready
34-smp-merge-keys-volumes-tolerations	+	readOnly: true
34-smp-merge-keys-volumes-tolerations	+	medium: Memory
35-smp-crd-object	+	letsencrypt-prod
35-smp-crd-object	-	api.staging.example.com
35-smp-crd-object	-	APINearCapacity
35-smp-crd-object	-	APIDown
36-untyped-scalar-normalisation	+	version: 7.1$
36-untyped-scalar-normalisation	+	mode: 493
36-untyped-scalar-normalisation	+	releaseDate: "2024-05-01T00:00:00Z"
37-namespace-rbac-cluster-scoped	+	namespace: monitoring
37-namespace-rbac-cluster-scoped	-	observability
37-namespace-rbac-cluster-scoped	+	namespace: kube-system
37-namespace-rbac-cluster-scoped	+	namespace: prometheus
38-namespace-override-and-webhook	+	namespace: platform-policy
38-namespace-override-and-webhook	-	namespace: (default|kube-system)
39-nameprefix-configmap-secret-refs	+	name: acme-registry-pull
39-nameprefix-configmap-secret-refs	+	secretName: acme-app-credentials
39-nameprefix-configmap-secret-refs	+	name: acme-client-cert
39-nameprefix-configmap-secret-refs	+	name: vault-injected
40-nameprefix-rbac-serviceaccount	+	serviceAccountName: team-a-deployer
40-nameprefix-rbac-serviceaccount	+	name: team-a-node-reader
40-nameprefix-rbac-serviceaccount	+	name: view$
41-namesuffix-ingress-hpa-sts-pvc	+	claimName: blog-content-v2
41-namesuffix-ingress-hpa-sts-pvc	+	serviceName: blog-db-v2
41-namesuffix-ingress-hpa-sts-pvc	+	name: commento
41-namesuffix-ingress-hpa-sts-pvc	-	name: data-v2
42-prefix-suffix-kinds	+	priorityClassName: eu-shop-critical-blue
42-prefix-suffix-kinds	+	name: shop$
42-prefix-suffix-kinds	+	hooksConfigMap: backup-hooks$
43-labels-metadata-only	+	owner: team-content
43-labels-metadata-only	-	^        owner
44-labels-include-templates	+	^        app.kubernetes.io/version: 1.0.0
44-labels-include-templates	-	^      app.kubernetes.io/version
45-labels-include-selectors	+	^      app.kubernetes.io/instance: quotes-prod
45-labels-include-selectors	+	^          app.kubernetes.io/instance: quotes-prod
46-commonlabels-selectors-templates	+	^      env: prod
46-commonlabels-selectors-templates	+	^          env: prod
47-commonannotations	+	^            runbook:
48-images-name-tag-registry	+	image: nginx:1.27.0
48-images-name-tag-registry	+	image: registry.example.com/payments/api-fips:2.15.0
48-images-name-tag-registry	+	image: ghcr.io/example/migrate:0.3.1
48-images-name-tag-registry	+	image: mirror.example.com/library/nginx:1.25
48-images-name-tag-registry	+	image: api:0.1
49-images-digest	+	ledger@sha256:4b8e
49-images-digest	+	auditor:3.1.0$
49-images-digest	+	mirror.example.com/busybox@sha256:1111
50-replicas	+	replicas: 4
50-replicas	+	replicas: 2
50-replicas	+	replicas: 3
51-configmapgenerator-literals-files	+	mime.types: \|
51-configmapgenerator-literals-files	+	GREETING: hello = world
51-configmapgenerator-literals-files	+	name: nginx-conf-[a-z0-9]{10}$
52-configmapgenerator-envs	+	QUOTED: '"double quotes are kept"'
52-configmapgenerator-envs	+	ZONE: eu-west-1a
53-secretgenerator-types	+	type: kubernetes.io/tls
53-secretgenerator-types	+	type: kubernetes.io/dockerconfigjson
53-secretgenerator-types	+	type: kubernetes.io/basic-auth
54-generator-behavior-merge	+	SHARDS: "3"
54-generator-behavior-merge	+	INDEX: products
54-generator-behavior-merge	+	name: search-config-g9m6248667$
54-generator-behavior-merge	+	            name: search-config-g9m6248667$
55-generator-behavior-replace-create	-	RECIPIENTS
55-generator-behavior-replace-create	+	name: report-branding-[a-z0-9]{10}$
56-generator-merge-into-plain-configmap	+	NEW_SEARCH: "true"
56-generator-merge-into-plain-configmap	+	name: feature-flags$
57-generator-patched-in-overlay-rehash	+	name: limits-4c5bd6gk8m$
58-generator-options	+	name: fixed-name$
58-generator-options	+	note: per-generator
58-generator-options	+	generated-by: kustomize
59-generator-options-global-nohash	+	name: hashed-config$
60-generator-hash-propagation	+	secretName: prod-api-tls-[a-z0-9]{10}$
60-generator-hash-propagation	+	name: prod-api-config-[a-z0-9]{10}$
60-generator-hash-propagation	-	name: (api-config|api-secrets|api-tls)$
61-replacements-inline-select-reject	+	value: old-db.internal
61-replacements-inline-select-reject	+	release.example.com/version: 2024.06.1
61-replacements-inline-select-reject	-	PLACEHOLDER
62-replacements-list-selector-fieldpaths	+	targetPort: 8081
62-replacements-list-selector-fieldpaths	-	PLACEHOLDER
63-replacements-delimiter-index	+	app.kubernetes.io/version: 2.14.1
63-replacements-delimiter-index	+	DB_HOST: payments-db.pay-prod.svc.cluster.local
63-replacements-delimiter-index	+	QUEUE: payments-events-prod
64-replacements-create	+	serviceAccountName: exporter
64-replacements-create	+	example.com/service-account: exporter
65-replacements-from-file	+	host: www.example.org
65-replacements-from-file	+	secretName: site-tls
65-replacements-from-file	-	PLACEHOLDER
66-overlay-of-overlay-prefixes	+	name: prod-storefront-web-v1$
66-overlay-of-overlay-prefixes	+	name: prod-storefront-web-config-v1-[a-z0-9]{10}$
66-overlay-of-overlay-prefixes	+	replicas: 3
67-overlay-generator-merge-nameref	+	max_connections = 400
67-overlay-generator-merge-nameref	+	name: billing-pg-config-[a-z0-9]{10}$
67-overlay-generator-merge-nameref	-	name: pg-config$
68-components-patches-namespace	+	--email-domain=example.com
68-components-patches-namespace	+	name: oauth-proxy-[a-z0-9]{10}$
68-components-patches-namespace	+	targetPort: oauth
68-components-patches-namespace	+	namespace: dashboards
69-output-order-legacy	+	^kind: ValidatingWebhookConfiguration
70-output-order-fifo	+	^kind: Namespace
71-payments-prod	+	imagePullPolicy: IfNotPresent
71-payments-prod	+	replicas: 3
72-payments-prod-after-fix	-	imagePullPolicy
72-payments-prod-after-fix	+	replicas: 3
73-patch-targets-after-renames	+	name: p-batch
73-patch-targets-after-renames	+	found-by: original-name
73-patch-targets-after-renames	+	replicas: 4
73-patch-targets-after-renames	+	name: p-settings-renamed
73-patch-targets-after-renames	+	mode: b
73-patch-targets-after-renames	+	imagePullPolicy: Always
81-namespace-kind-of-another-group	+	name: tenant-namespace
81-namespace-kind-of-another-group	+	name: t-tenant-api-x
81-namespace-kind-of-another-group	+	name: t-require-owner-x
81-namespace-kind-of-another-group	-	name: t-tenant-crd
82-smp-list-item-without-merge-key	+	image: busybox:1.36
82-smp-list-item-without-merge-key	+	containers: \[\]
82-smp-list-item-without-merge-key	-	image: log-shipper
82-smp-list-item-without-merge-key	-	name: exporter
83-annotation-values-not-strings	+	mode: "0755"
83-annotation-values-not-strings	+	tilde: "~"
83-annotation-values-not-strings	+	version: 2$
83-annotation-values-not-strings	+	port: 9090
84-kustomization-field-name-case-and-duplicates	+	name: legacy-checkout-v1
84-kustomization-field-name-case-and-duplicates	+	image: shop:2.0
84-kustomization-field-name-case-and-duplicates	+	generated: "true"
84-kustomization-field-name-case-and-duplicates	-	first: overwritten
84-kustomization-field-name-case-and-duplicates	+	revisionHistoryLimit: 5
84-kustomization-field-name-case-and-duplicates	+	replicas: 3
85-json6902-add-to-absent-annotations	+	owner: team-payments
85-json6902-add-to-absent-annotations	+	original-name: feature-flags
85-json6902-add-to-absent-annotations	+	prometheus.io/scrape: "true"
91-generator-same-name-two-namespaces	+	name: acme-settings-gh5k8797t4$
91-generator-same-name-two-namespaces	+	name: acme-settings-95chh4bhbk$
91-generator-same-name-two-namespaces	+	name: acme-flags-8699m96ft7$
91-generator-same-name-two-namespaces	+	name: acme-flags-dcf7t8k524$
91-generator-same-name-two-namespaces	+	REPLICAS: "5"
92-generator-merge-hash-options	+	name: alpha$
92-generator-merge-hash-options	+	name: beta$
92-generator-merge-hash-options	+	name: gamma$
92-generator-merge-hash-options	+	name: epsilon$
92-generator-merge-hash-options	+	name: zeta$
92-generator-merge-hash-options	+	name: delta-[a-z0-9]{10}$
93-rename-by-patch-updates-references	+	  name: config-reader$
93-rename-by-patch-updates-references	+	serviceAccountName: batch-runner$
93-rename-by-patch-updates-references	+	claimName: scratch-fast$
93-rename-by-patch-updates-references	+	name: jobs-[a-z0-9]{10}$
93-rename-by-patch-updates-references	+	secretName: tls-secret$
93-rename-by-patch-updates-references	+	name: legacy-config$
93-rename-by-patch-updates-references	+	namespace: audit$
93-rename-by-patch-updates-references	-	ignored-name
93-rename-by-patch-updates-references	+	  name: cache-v2$
93-rename-by-patch-updates-references	+	serviceName: cache$
94-namerefs-admission-policy-podtemplate	+	policyName: ops-max-replicas-v1$
94-namerefs-admission-policy-podtemplate	+	policyName: cluster-baseline$
94-namerefs-admission-policy-podtemplate	+	name: ops-registry-pull-v1-[a-z0-9]{10}$
94-namerefs-admission-policy-podtemplate	+	secretName: ops-batch-credentials-v1-[a-z0-9]{10}$
94-namerefs-admission-policy-podtemplate	+	name: batch-settings$
95-nameref-prefix-suffix-sieve	+	            name: a-settings-[a-z0-9]{10}$
95-nameref-prefix-suffix-sieve	+	            name: b-settings-[a-z0-9]{10}$
95-nameref-prefix-suffix-sieve	+	            name: p-settings-[a-z0-9]{10}$
95-nameref-prefix-suffix-sieve	+	            name: settings-[a-z0-9]{10}$
96-patch-schema-kind-and-json-first-document	+	patched: json
96-patch-schema-kind-and-json-first-document	+	tier: web
96-patch-schema-kind-and-json-first-document	-	replicas: 9
96-patch-schema-kind-and-json-first-document	-	ignored
102-json-patch-runs	+	last: "2"
102-json-patch-runs	+	mode: patched
102-json-patch-runs	+	replicas: 7
102-json-patch-runs	+	name: b2
102-json-patch-runs	+	renamed: "yes"
102-json-patch-runs	+	found-by: original-name
107-origin-annotations	+	path: base/sub/lists.yaml
107-origin-annotations	+	path: comp/extra.yaml
107-origin-annotations	+	configuredIn: base/kustomization.yaml
107-origin-annotations	+	configuredIn: comp/kustomization.yaml
107-origin-annotations	+	kind: SecretGenerator
107-origin-annotations	-	somewhere/else
107-origin-annotations	-	managed-by
108-internal-annotations-stripped	+	selected: by-a-stripped-annotation
108-internal-annotations-stripped	+	internal.config.kubernetes.io/owner: kept
108-internal-annotations-stripped	-	config.kubernetes.io/(path|index|origin)
108-internal-annotations-stripped	-	config.k8s.io/id
109-json-patch-value-with-integer-keys	+	"503": /errors/503.html
109-json-patch-value-with-integer-keys	+	"500": /errors/500.html
110-generator-keys-as-written	+	PATH: ""
110-generator-keys-as-written	+	export A: "1"
110-generator-keys-as-written	+	a b: spaced
110-generator-keys-as-written	-	dropped
111-generators-before-components	+	region: eu
111-generators-before-components	+	component: regional
111-generators-before-components	+	patched-by: component
112-replacement-creates-list-elements	+	- name: db.example.com
112-replacement-creates-list-elements	+	- db.example.com
113-vars-escaped-dots-and-non-scalars	+	--db=db.example.com
113-vars-escaped-dots-and-non-scalars	+	--ports=\$\(DB_PORTS\)
114-smp-fields-newer-than-kustomize	+	wait-for-approval
114-smp-fields-newer-than-kustomize	-	wait-for-quota
114-smp-fields-newer-than-kustomize	-	not-system
114-smp-fields-newer-than-kustomize	+	--verbose
115-replicas-keeps-a-string-count	+	replicas: "5"
115-replicas-keeps-a-string-count	+	replicas: 3
117-json-patch-library-semantics	+	- --final
117-json-patch-library-semantics	+	metadata: null
118-patch-targets-by-kind-after-kind-change	+	patched: statefulset
118-patch-targets-by-kind-after-kind-change	-	never: applied
EOF
)

# Expected kind order (first line of each document) for the ordering cases.
ORDER_69="Namespace Namespace ResourceQuota CustomResourceDefinition ServiceAccount Role RoleBinding ConfigMap Secret Service Deployment Deployment Deployment CronJob PodDisruptionBudget HorizontalPodAutoscaler ServiceMonitor Ingress ValidatingWebhookConfiguration"
ORDER_70="Deployment Service ConfigMap ConfigMap Namespace"
ORDER_116="PodDisruptionBudget Job Deployment ConfigMap Pod"

selected() {
  [ ${#FILTERS[@]} -eq 0 ] && return 0
  local f
  for f in "${FILTERS[@]}"; do [[ "$1" == *"$f"* ]] && return 0; done
  return 1
}

kinds_of() { grep -E '^kind: ' "$1" | sed 's/^kind: //' | tr '\n' ' ' | sed 's/ $//'; }

pass=0 fail=0
declare -A count_ok count_all

report_bad() { fail=$((fail + 1)); echo "BAD  $1: $2"; }

check_assertions() { # case outfile -> prints problems, returns 1 if any
  local name=$1 out=$2 bad=0 c sign re
  while IFS=$'\t' read -r c sign re; do
    [ "$c" = "$name" ] || continue
    if [ "$sign" = "+" ]; then
      grep -Eq -- "$re" "$out" || { echo "      missing: /$re/"; bad=1; }
    else
      grep -Eq -- "$re" "$out" && { echo "      unexpected: /$re/"; bad=1; }
    fi
  done <<<"$ASSERTIONS"
  return $bad
}

render_valid() { # suite dir
  local suite=$1 dir name out err rc ndocs nwarn problems
  for dir in "$TESTS/$suite"/*/; do
    dir=${dir%/}; name=$(basename "$dir")
    [ -f "$dir/kustomization.yaml" ] || continue
    selected "$suite/$name" || continue
    count_all[$suite]=$(( ${count_all[$suite]:-0} + 1 ))
    out=$TMP/out err=$TMP/err
    "$KUBECTL" kustomize "$dir" >"$out" 2>"$err"; rc=$?
    if [ $rc -ne 0 ]; then report_bad "$suite/$name" "kubectl kustomize failed: $(grep -v '^#' "$err" | head -c 400)"; continue; fi
    if ! grep -q '[^[:space:]]' "$out"; then report_bad "$suite/$name" "empty output"; continue; fi
    ndocs=$(grep -c '^kind: ' "$out")
    nwarn=$(grep -c 'Warning' "$err")
    problems=""
    if [ "$suite" = kustomize ]; then
      # self-contained: a copy of the case dir alone must render the same
      rm -rf "$TMP/copy"; mkdir -p "$TMP/copy"; cp -R "$dir" "$TMP/copy/$name"
      if ! "$KUBECTL" kustomize "$TMP/copy/$name" >"$TMP/out2" 2>/dev/null || ! cmp -s "$out" "$TMP/out2"; then
        problems+="      not self-contained (a copy renders differently or fails)"$'\n'
      fi
      problems+=$(check_assertions "$name" "$out")
      case "$name" in
        69-*) [ "$(kinds_of "$out")" = "$ORDER_69" ] || problems+=$'\n'"      order: $(kinds_of "$out")" ;;
        70-*) [ "$(kinds_of "$out")" = "$ORDER_70" ] || problems+=$'\n'"      order: $(kinds_of "$out")" ;;
        116-*) [ "$(kinds_of "$out")" = "$ORDER_116" ] || problems+=$'\n'"      order: $(kinds_of "$out")" ;;
      esac
    fi
    if [ -n "${problems//[[:space:]]/}" ]; then
      report_bad "$suite/$name" "renders ($ndocs objects) but:"; echo "$problems" | sed '/^$/d'
      continue
    fi
    pass=$((pass + 1)); count_ok[$suite]=$(( ${count_ok[$suite]:-0} + 1 ))
    printf 'OK   %s/%s (%d objects%s)\n' "$suite" "$name" "$ndocs" "$([ "$nwarn" -gt 0 ] && echo ", $nwarn deprecation warning(s)")"
    [ $VERBOSE -eq 1 ] && sed 's/^/      | /' "$out"
  done
}

render_invalid() {
  local suite=kustomize-invalid dir name out err rc msg
  for dir in "$TESTS/$suite"/*/; do
    dir=${dir%/}; name=$(basename "$dir")
    [ -f "$dir/kustomization.yaml" ] || continue
    selected "$suite/$name" || continue
    count_all[$suite]=$(( ${count_all[$suite]:-0} + 1 ))
    out=$TMP/out err=$TMP/err
    "$KUBECTL" kustomize "$dir" >"$out" 2>"$err"; rc=$?
    if [ $rc -eq 0 ]; then report_bad "$suite/$name" "was ACCEPTED (must fail)"; continue; fi
    pass=$((pass + 1)); count_ok[$suite]=$(( ${count_ok[$suite]:-0} + 1 ))
    # one line: drop klog prefix and the absolute path of the tests dir
    msg=$(grep -v '^# Warning' "$err" | tr '\n\t' '  ' | sed -E 's/^E[0-9]+ [0-9:.]+ +[0-9]+ run.go:[0-9]+\] "command failed" err=//; s#'"$TESTS"'/##g; s/  +/ /g')
    if [ $VERBOSE -eq 1 ]; then printf 'FAILS as expected  %s/%s (rc=%d)\n      %s\n' "$suite" "$name" "$rc" "$msg"
    else
      # long messages: keep the head and the tail (the innermost cause is often last)
      [ ${#msg} -gt 360 ] && msg="${msg:0:170} … ${msg: -170}"
      printf 'FAILS as expected  %s/%s (rc=%d): %s\n' "$suite" "$name" "$rc" "$msg"
    fi
  done
}

render_valid kustomize
render_valid kustomize-fallback
render_invalid

echo
for s in kustomize kustomize-fallback kustomize-invalid; do
  printf '%-20s %3d/%-3d as expected\n' "$s" "${count_ok[$s]:-0}" "${count_all[$s]:-0}"
done
if [ $fail -ne 0 ]; then echo "RESULT: $fail problem(s)"; exit 1; fi
echo "RESULT: all $pass cases as expected ($("$KUBECTL" version --client 2>/dev/null | grep -i kustomize | tr -d '\n'))"
