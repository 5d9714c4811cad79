#!/usr/bin/env bash
# The script part of the CI examples (github-actions.yml, gitlab-ci.yml): previews a pull
# request's change with `plumb preview` and posts the comment, or updates the one it posted
# before (found by its first line's marker).
#
#   BASE=origin/main HEAD=HEAD examples/ci/preview.sh
#
# Environment:
#   BASE, HEAD        the revisions to compare (required)
#   PLUMB             the plumb binary (default: plumb on PATH)
#   LIVE              a `plumb snapshot` directory for the preflight (optional)
#   COMMENT           where the comment body is written (default: plumb-preview.md)
#   POST              github, gitlab, or none (default: none: only write COMMENT)
#   GITHUB_TOKEN, GITHUB_REPOSITORY, PR_NUMBER                 with POST=github
#   GITLAB_TOKEN, CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID   with POST=gitlab
# Exit code: plumb preview's with --fail-on preflight (1: the cluster will fight the change),
# 2 on an error.
set -euo pipefail
: "${BASE:?set BASE}" "${HEAD:?set HEAD}"
plumb=${PLUMB:-plumb}
comment=${COMMENT:-plumb-preview.md}
marker='<!-- plumb-preview -->'
args=(preview --repo . --base "$BASE" --head "$HEAD" --out plumb-preview-full.md --fail-on preflight)
if [ -n "${LIVE:-}" ]; then args+=(--live "$LIVE"); fi
set +e
body=$("$plumb" "${args[@]}")
code=$?
set -e
if [ "$code" -ge 2 ]; then
  exit "$code"
fi
printf '%s\n%s' "$marker" "$body" > "$comment"

json_body() { python3 -c 'import json,sys; print(json.dumps({"body": open(sys.argv[1]).read()}))' "$comment"; }
case "${POST:-none}" in
  none) ;;
  github)
    api="https://api.github.com/repos/$GITHUB_REPOSITORY/issues"
    auth=(-H "Authorization: Bearer $GITHUB_TOKEN" -H "Accept: application/vnd.github+json")
    id=$(curl -sf "${auth[@]}" "$api/$PR_NUMBER/comments?per_page=100" \
      | python3 -c 'import json,sys; print(next((str(c["id"]) for c in json.load(sys.stdin) if c["body"].startswith("<!-- plumb-preview -->")), ""))')
    if [ -n "$id" ]; then
      json_body | curl -sf "${auth[@]}" -X PATCH "$api/comments/$id" -d @- >/dev/null
    else
      json_body | curl -sf "${auth[@]}" -X POST "$api/$PR_NUMBER/comments" -d @- >/dev/null
    fi ;;
  gitlab)
    api="$CI_API_V4_URL/projects/$CI_PROJECT_ID/merge_requests/$CI_MERGE_REQUEST_IID/notes"
    auth=(-H "PRIVATE-TOKEN: $GITLAB_TOKEN" -H "Content-Type: application/json")
    id=$(curl -sf "${auth[@]}" "$api?per_page=100" \
      | python3 -c 'import json,sys; print(next((str(c["id"]) for c in json.load(sys.stdin) if c["body"].startswith("<!-- plumb-preview -->")), ""))')
    if [ -n "$id" ]; then
      json_body | curl -sf "${auth[@]}" -X PUT "$api/$id" -d @- >/dev/null
    else
      json_body | curl -sf "${auth[@]}" -X POST "$api" -d @- >/dev/null
    fi ;;
  *) echo "POST must be github, gitlab or none" >&2; exit 2 ;;
esac
exit "$code"
