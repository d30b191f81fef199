#!/usr/bin/env bash
# Installs meshc from the action's own checkout, so `meshc version` — the first thing a bug report
# needs — names the commit it was built from. Go records the commit only when it builds inside a
# git checkout, and GitHub hands an action over as an archive without .git: built as it is, the
# action's meshc said "commit unknown". So the commit is given with -ldflags: the action's ref
# when it is a commit (`uses: meshc-dev/meshc@<sha>`), else what the ref (`@main`) names in the
# action's repository now, asked with git ls-remote. A checkout that is a git repository (a
# workflow's `uses: ./`) is left to Go, which then also says whether the tree was modified.
set -euo pipefail
cd "${GITHUB_ACTION_PATH:-.}"
ref=${ACTION_REF:-}
repo=${ACTION_REPOSITORY:-}
commit=
if git rev-parse --is-inside-work-tree >/dev/null 2>&1 && [ "$(git rev-parse --show-toplevel)" = "$(pwd -P)" ]; then
  commit=
elif [[ $ref =~ ^[0-9a-f]{40}$ ]]; then
  commit=$ref
elif [ -n "$ref" ] && [ -n "$repo" ]; then
  commit=$(git ls-remote "${GITHUB_SERVER_URL:-https://github.com}/$repo" "refs/heads/$ref" "refs/tags/$ref^{}" "refs/tags/$ref" 2>/dev/null | head -n 1 | cut -f 1) || commit=
  [ -n "$commit" ] || echo "::warning title=meshc::could not tell which commit $repo@$ref is, so meshc version will say it does not know; name the action by a commit (@<sha>) to have it said"
fi
if [ -n "$commit" ]; then
  go install -ldflags "-X github.com/meshc-dev/meshc/internal/buildinfo.commit=$commit" ./cmd/meshc
else
  go install ./cmd/meshc
fi
meshc version
