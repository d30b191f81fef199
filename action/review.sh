#!/usr/bin/env bash
# The meshc action's work, kept in a file so the action and its test (cmd/meshc's
# TestTheAction) run the same lines. It reads only its environment (action.yml maps the inputs
# and the event onto it) and writes the step's outputs; it never fails the step itself, so the
# SARIF upload can follow: the action's last step fails the job when `failed` is set.
#
# On a pull request it compares with the pull request's base however the repository was
# checked out: actions/checkout clones at depth 1, which lacks the base commit, so the base is
# fetched (that commit alone) from origin first. Then `meshc lint --against BASE` reports the
# catalogue's findings and what the change breaks, and `meshc plan --against BASE` is the
# comment — or, when the catalogue has errors and so no plan, their count and the first of them. From a fork the token is read-only: no comment and no SARIF upload, and the plan is
# in the job summary (as it is on every pull request).
set -uo pipefail

catalogue=${CATALOGUE:-.}
tmp=${RUNNER_TEMP:-$(mktemp -d)}
out=${GITHUB_OUTPUT:-/dev/null}
summary=${GITHUB_STEP_SUMMARY:-/dev/null}
failed=()

against=()
fork=false
if [ "${EVENT_NAME:-}" = pull_request ] && [ -n "${BASE_SHA:-}" ]; then
  if ! git -C "$catalogue" cat-file -e "$BASE_SHA^{commit}" 2>/dev/null; then
    echo "meshc: fetching the pull request's base ${BASE_SHA:0:12} (the checkout lacks it)"
    if ! git -C "$catalogue" fetch --quiet --no-tags --depth=1 origin "$BASE_SHA"; then
      echo "::error title=meshc::could not fetch the pull request's base $BASE_SHA from origin, so the change cannot be compared with it: give the job's token read access to contents, or check out with fetch-depth: 0"
      echo "failed=the base could not be fetched" >> "$out"
      exit 0
    fi
  fi
  against=(--against "$BASE_SHA")
  if [ -n "${HEAD_REPO:-}" ] && [ "${HEAD_REPO:-}" != "${GH_REPO:-}" ]; then
    fork=true
  fi
fi

# Findings as annotations on the diff, then as SARIF for code scanning: the catalogue's own and,
# on a pull request, what the change breaks.
meshc lint --format github "${against[@]}" "$catalogue"
lint=$?
echo "lint-exit=$lint" >> "$out"
meshc lint --format sarif "${against[@]}" "$catalogue" > "$tmp/meshc.sarif" 2> "$tmp/lint.err"
if [ "${SARIF:-true}" = true ] && [ "$fork" = false ]; then
  echo "upload-sarif=true" >> "$out"
fi
# The catalogue's own errors, apart from what the change breaks: they are what stops it being
# compiled, so there is no plan and no golden file to judge while there are any.
meshc lint --format text "$catalogue" > "$tmp/own.txt" 2>/dev/null
own=$(grep -c ': error: ' "$tmp/own.txt")
case "$lint" in
  0) ;;
  1) if [ "$own" -gt 0 ]; then
       failed+=("meshc lint found $own error(s) in the catalogue, so it was not compiled: see the annotations")
     else
       failed+=("meshc lint found what the change breaks: see the annotations")
     fi ;;
  *) failed+=("meshc lint could not run (exit $lint): $(head -c 300 "$tmp/lint.err" | tr '\n' ' ')") ;;
esac

# emit --check on a catalogue with errors fails for the errors, and the failure would blame the
# golden files: they are checked once there are none.
if [ "${CHECK_GOLDEN:-true}" = true ] && [ "$lint" -ne 2 ] && [ "$own" -eq 0 ]; then
  meshc emit --check "$catalogue" || failed+=("the golden files are stale: run meshc emit")
fi

# The comment: the plan, or why there is none. A catalogue with errors gets their count and the
# first of them instead of an empty plan, so the comment never replaces the last good plan with
# nothing, and says what the reviewer is waiting for.
if [ ${#against[@]} -gt 0 ]; then
  { echo "<!-- meshc plan -->"; echo "### meshc plan"; echo
    echo "Compared with the pull request's base, ${BASE_SHA:0:12}."; echo; } > "$tmp/comment.md"
  if [ "$lint" -eq 2 ]; then
    { echo "**meshc could not lint the catalogue**, so there is no plan:"; echo; echo '```'
      head -c 2000 "$tmp/lint.err"; echo; echo '```'; } >> "$tmp/comment.md"
  elif [ "$own" -gt 0 ]; then
    { echo "**meshc lint found $own error(s) in the catalogue, so there is no plan**: a catalogue with errors is not compiled. The plan replaces this once they are fixed."
      echo; echo "The first of them (each is annotated on the diff):"; echo; echo '```'
      grep ': error: ' "$tmp/own.txt" | head -n 10; tail -n 1 "$tmp/own.txt"; echo '```'; } >> "$tmp/comment.md"
  else
    meshc plan --format markdown "${against[@]}" "$catalogue" > "$tmp/plan.md" 2> "$tmp/plan.err"
    if [ $? -eq 2 ]; then
      failed+=("meshc plan could not compare with the base: $(head -c 300 "$tmp/plan.err" | tr '\n' ' ')")
      { echo "**meshc plan could not compare with the base**:"; echo; echo '```'
        head -c 2000 "$tmp/plan.err"; echo; echo '```'; } >> "$tmp/comment.md"
    else
      cat "$tmp/plan.md" >> "$tmp/comment.md"
    fi
  fi
  cat "$tmp/comment.md" >> "$summary"
  if [ "$fork" = true ]; then
    echo "::notice title=meshc::a pull request from a fork has a read-only token: the plan is in the job summary, not a comment"
  elif [ "${COMMENT_PLAN:-true}" = true ] && [ -n "${PR:-}" ]; then
    # One comment per pull request, edited on every push rather than piling up. A comment
    # that cannot be posted is said, and fails nothing: the plan is in the summary.
    gh pr comment "$PR" --edit-last --body-file "$tmp/comment.md" 2>/dev/null ||
      gh pr comment "$PR" --body-file "$tmp/comment.md" ||
      echo "::warning title=meshc::could not comment on pull request $PR (does the token have pull-requests: write?); the plan is in the job summary"
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  (IFS=';'; echo "failed=${failed[*]}") >> "$out"
fi
exit 0
