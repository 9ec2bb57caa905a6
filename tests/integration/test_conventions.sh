#!/usr/bin/env bash
# The conventions of az, docker and gh (issue 14): completion driven in real bash, zsh (under
# tmux) and fish; help; -o none and jsonc; --debug and --only-show-errors; mlw config and the
# default target; one JSON schema per resource (docs/cli.md "Output schema"); table widths of
# wide and combining characters; the jq examples of docs/cli.md, run as written.
source "$(dirname "$0")/lib.sh"
for tool in bash zsh fish tmux jq script; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is required (scripts/setup installs it)"; exit 1; }
done
DOCS=$MLW_SOURCE_DIR/docs/cli.md
mkdir -p "$WORK/bin" && ln -s "$MLW" "$WORK/bin/mlw"
export PATH="$WORK/bin:$PATH"
CONFIG=$XDG_CONFIG_HOME/mlw/config.yaml
# on_terminal COMMAND: runs it under a pseudo-terminal of 100 columns; its output without \r.
on_terminal() { script -qec "stty cols 100; $1" /dev/null </dev/null | tr -d '\r'; }

cd "$WORK" && "$MLW" -q project create -n conv >/dev/null && cd "$WORK/conv" || exit 1
printf 'import sys\nsys.exit(3)\n' >fail.py
printf 'import time\nprint("up", flush=True)\ntime.sleep(60)\n' >slow.py
"$MLW" -q experiment submit -c local train.py --epochs 1 >/dev/null
"$MLW" -q experiment submit -c local fail.py >/dev/null
FAILED_RUN=$("$MLW" history last -o json | jq -r .run_id)

## Help
run_mlw history --help
expect_contains "group help lists the global options" "$OUT" "Global options:"
expect_contains "… with -o" "$OUT" "-o,--output FORMAT"
expect_contains "group help has its own examples" "$OUT" "mlw history list --status Failed"
expect_not_contains "… not the top-level ones" "$OUT" "mlw project create -n demo && cd demo"
run_mlw history info --help
expect_contains "a required option is marked" "$OUT" "-r,--run RUN_ID (required)"
commands=("")
for group in $("$MLW" __complete '' | cut -f1); do
  commands+=("$group")
  for sub in $("$MLW" __complete "$group" '' | cut -f1); do
    commands+=("$group $sub")
    [ "$group $sub" = "computetarget attach" ] || continue
    for kind in $("$MLW" __complete "$group" "$sub" '' | cut -f1); do
      commands+=("$group $sub $kind")
    done
  done
done
check "the tree has the attach kinds" test "${#commands[@]}" -gt 25
text_type="" no_globals=""
for command in "${commands[@]}"; do
  # shellcheck disable=SC2086
  help=$("$MLW" $command --help)
  ! grep -qE ' (TEXT|INT)( |$)' <<<"$help" || text_type+=" [$command]"
  [ -z "$command" ] || grep -qE -- '^  -o,--output FORMAT' <<<"$help" || no_globals+=" [$command]"
  printf '@@ %s\n%s\n' "$command" "$help" >>"$WORK/helps.txt"
done
# Columns are counted in characters (a "…" is one column, not its three bytes): no line over 80,
# and an option's description starts in column 31 on every row.
help_lines() { # long|misaligned
  python3 - "$1" "$WORK/helps.txt" <<'PY'
import re, sys
command = ""
for line in open(sys.argv[2], encoding="utf-8").read().split("\n"):
    if line.startswith("@@ "):
        command = line[3:]
        continue
    m = re.match(r"^  (-\S.*?)  +(\S.*)$", line)
    if sys.argv[1] == "long" and len(line) > 80 or sys.argv[1] == "misaligned" and m and m.start(2) != 30:
        print(f"[{command}] {line}")
PY
}
expect_eq "no help line is over 80 columns off a terminal" "$(help_lines long)" ""
expect_eq "every option's description starts in column 31" "$(help_lines misaligned)" ""
expect_eq "no value shows as TEXT or INT" "$text_type" ""
expect_eq "every command's help lists the global options" "$no_globals" ""
wide=$(on_terminal "mlw history list --help")
expect_contains "on a terminal of 100 columns help uses them" "$wide" \
  'Output format: table, json, jsonc, tsv, yaml or none (or $MLW_OUTPUT)'
expect_not_contains "off a terminal the same line is wrapped at 80" "$("$MLW" history list --help)" \
  'Output format: table, json, jsonc, tsv, yaml or none (or $MLW_OUTPUT)'

## --debug and --only-show-errors
run_mlw project create -n loud
expect_contains "project create says what is next" "$ERR" "Next:"
run_mlw --only-show-errors project create -n quiet
expect_eq "--only-show-errors: nothing on stderr" "$ERR" ""
check "… and the project was made" test -f quiet/train.py
run_mlw experiment submit -c local train.py --epochs 1
expect_not_contains "no debug lines by default" "$ERR" "mlw: debug:"
run_mlw --debug experiment submit -c local train.py --epochs 1
debug_lines=$(grep -c '^mlw: \(debug\|trace\):' <<<"$ERR")
run_mlw -vv experiment submit -c local train.py --epochs 1
expect_eq "--debug logs as -vv does" "$debug_lines" "$(grep -c '^mlw: \(debug\|trace\):' <<<"$ERR")"
check "… and that is some lines" test "$debug_lines" -gt 0

## Output formats
run_mlw -o none history list
expect_eq "-o none: history list prints nothing" "$OUT$CODE" "0"
run_mlw -o none experiment submit -c local fail.py
expect_eq "-o none: submit keeps the script's exit code" "$CODE" 3
expect_eq "-o none: and prints nothing on stdout" "$OUT" ""
expect_eq "-o jsonc off a terminal is json" "$("$MLW" -o jsonc history list)" "$("$MLW" -o json history list)"
colored=$(on_terminal "mlw -o jsonc history last")
expect_contains "-o jsonc on a terminal colours the keys" "$colored" $'\e[1;34m"run_id"\e[0m'
expect_eq "… and is the json without its colours" "$(sed 's/\x1b\[[0-9;]*m//g' <<<"$colored")" \
  "$("$MLW" -o json history last)"
expect_not_contains "NO_COLOR: no colours" "$(on_terminal "NO_COLOR=1 mlw -o jsonc history last")" $'\e['
expect_error "an unknown format" 2 'did you mean "json"' -o jsn history list

## mlw config and the default target
expect_error "submit without -c or a default" 125 "mlw config set defaults.target" \
  experiment submit train.py
run_mlw config set defaults.target local
expect_eq "config set exits 0" "$CODE" 0
expect_contains "the file holds it" "$(cat "$CONFIG")" 'target: "local"'
run_mlw experiment submit train.py --epochs 1
expect_eq "submit without -c uses the default" "$CODE" 0
expect_contains "… and says so" "$ERR" "using the default target local (defaults.target, user: $CONFIG)"
run_mlw config set defaults.output yaml
run_mlw history last
expect_contains "defaults.output from the user's file" "$OUT" 'run_id: "conv_'
run_mlw config set defaults.output tsv --local
origin() { "$MLW" "$@" config list --show-origin -o json | jq -r '.[] | select(.key == "defaults.output") | .value + " " + .origin'; }
expect_eq "the project's file over the user's" "$(origin)" "json flag: -o"
expect_eq "… shown without the flag" "$("$MLW" config get defaults.output)" "tsv"
expect_eq "… its origin" "$("$MLW" config list --show-origin | awk '$1 == "defaults.output" {print $3, $4}')" \
  "project: .mlw/config.yaml"
expect_eq "the environment over the files" \
  "$(MLW_OUTPUT=json "$MLW" config list | jq -r '.[] | select(.key == "defaults.output") | .value + " " + .origin')" \
  "json env: MLW_OUTPUT"
run_mlw -o table history list --top 1
expect_contains "a flag over everything" "$OUT" "RUN ID"
run_mlw config unset defaults.output --local
expect_contains "unset --local: the user's value again" "$("$MLW" config get defaults.output)" 'value: "yaml"' 
run_mlw config unset defaults.output
expect_error "get of a key set nowhere" 1 "defaults.output is not set" config get defaults.output
# Issue 33: config list shows the defaults in effect, as such.
expect_eq "config list: a key set nowhere shows its default" \
  "$("$MLW" config list --show-origin | awk '$1 == "defaults.output" {print $2, $3}')" "table default"
expect_eq "config list: every key is listed" "$("$MLW" config list -o json | jq -r '.[].key' | sort | paste -sd,)" \
  "core.no_color,core.only_show_errors,defaults.output,defaults.target"
run_mlw config set core.only_show_errors true
run_mlw project create -n quiet2
expect_eq "core.only_show_errors true: nothing on stderr" "$ERR" ""
run_mlw config set core.no_color yes
expect_not_contains "core.no_color: no colours on a terminal" \
  "$(on_terminal "mlw -o jsonc history last")" $'\e['
run_mlw config unset core.no_color
run_mlw config unset core.only_show_errors
cp "$CONFIG" "$WORK/config.saved"
expect_error "an unknown key" 2 'unknown config key "defaults.targt" (did you mean "defaults.target"?)' \
  config set defaults.targt x
expect_error "a bool that is not one" 2 "core.no_color must be true or false" config set core.no_color maybe
expect_error "a format that is not one" 2 'did you mean "json"' config set defaults.output jsn
expect_error "a target name that is not one" 2 "defaults.target" config set defaults.target ../x
check "failed sets leave the file as it was" cmp "$CONFIG" "$WORK/config.saved"
printf 'defaults:\n  target: [local\n' >"$CONFIG"
expect_error "a broken config file" 1 "$CONFIG:3:1: malformed YAML" project create -n never
check "… and nothing else ran" test ! -e never
printf 'defaults:\n  targt: local\n' >"$CONFIG"
expect_error "an unknown key in the file" 1 \
  "$CONFIG:2:3: unknown config key \"defaults.targt\" (did you mean \"defaults.target\"?)" history list
printf 'core:\n  no_color: maybe\n' >"$CONFIG"
expect_error "a value of the wrong type in the file" 1 "$CONFIG:2:13: core.no_color must be true or false" \
  history list
cp "$WORK/config.saved" "$CONFIG"
MLW_DEFAULT_TARGET=docker run_mlw config list --show-origin -o json
expect_eq "MLW_DEFAULT_TARGET over the file" \
  "$(jq -r '.[] | select(.key == "defaults.target") | .value + " " + .origin' <<<"$OUT")" \
  "docker env: MLW_DEFAULT_TARGET"
expect_error "a bad MLW_DEFAULT_TARGET" 2 "MLW_DEFAULT_TARGET" env MLW_DEFAULT_TARGET=../x "$MLW" history list
expect_error "an unknown completion shell" 2 'unknown shell "tcsh"' completion tcsh

## One JSON schema per resource
"$MLW" history list -o json >"$WORK/list.json"
"$MLW" history last -o json >"$WORK/last.json"
"$MLW" history info -r "$FAILED_RUN" -o json >"$WORK/info.json"
"$MLW" experiment submit -o json -c local train.py --epochs 1 >"$WORK/submit.json" 2>/dev/null
"$MLW" experiment submit -a -o json -c local slow.py >"$WORK/submit-a.json" 2>/dev/null
"$MLW" experiment cancel -r "$(jq -r .run_id "$WORK/submit-a.json")" -o json >"$WORK/cancel.json"
expect_eq "the canceled run says so" "$(jq -r .status "$WORK/cancel.json")" "Canceled"
out=$(python3 "$MLW_SOURCE_DIR/tests/integration/schema_check.py" "$DOCS" run "$WORK"/{list,last,info,submit,submit-a,cancel}.json 2>&1)
expect_eq "every run object matches docs/cli.md's Run table" "$out" ""
expect_eq "a run in list is the object info prints" \
  "$(jq --arg id "$FAILED_RUN" '.[] | select(.run_id == $id)' "$WORK/list.json")" "$(jq . "$WORK/info.json")"
expect_eq "submit -o json is the object info prints" "$(jq . "$WORK/submit.json")" \
  "$("$MLW" history info -r "$(jq -r .run_id "$WORK/submit.json")" -o json | jq .)"
"$MLW" -q computetarget attach remotedocker -n rd -a example.com -u me --no-connect -o json >"$WORK/attach.json"
"$MLW" -q computetarget attach slurm -n cluster -a example.com -u me --no-connect >/dev/null
"$MLW" computetarget list -o json >"$WORK/targets.json"
"$MLW" computetarget show -n docker -o json >"$WORK/show.json"
out=$(python3 "$MLW_SOURCE_DIR/tests/integration/schema_check.py" "$DOCS" target "$WORK"/{targets,show,attach}.json 2>&1)
expect_eq "every target object matches docs/cli.md's Target table" "$out" ""
expect_eq "a target in list is the object show prints" \
  "$(jq '.[] | select(.name == "docker")' "$WORK/targets.json")" "$(jq . "$WORK/show.json")"
expect_eq "attach -o json is the object show prints" "$(jq . "$WORK/attach.json")" \
  "$("$MLW" computetarget show -n rd -o json | jq .)"
expect_eq "no camelCase key in any object" \
  "$(jq -r '.. | objects | keys[] | select(test("[A-Z]"))' "$WORK"/{targets,list}.json | grep -v '^conv_' | sort -u)" ""

## Table widths: wide characters, combining marks, emoji
name=$'re\u0301sume\u0301_\u65e5\u672c\u8a9e_\U0001f642.py'
cp train.py "$name"
"$MLW" -q experiment submit -c local "$name" --epochs 1 >/dev/null
"$MLW" history list --top 3 >"$WORK/table.txt"
columns=$(python3 - "$WORK/table.txt" <<'PY'
import sys, unicodedata
def width(text):
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
head = lines[0]
start = width(head[:head.index("TARGET")])
print(start, *[width(l[:l.index(" local ") + 1]) for l in lines[1:]])
PY
)
read -r -a cols <<<"$columns"
check "the table has the runs" test "${#cols[@]}" -eq 4
expect_eq "TARGET starts at the same screen column on every line" \
  "$(printf '%s\n' "${cols[@]}" | sort -u | wc -l)" 1

## The jq examples of docs/cli.md, as written
examples=$(sed -n '/^### Piping into jq/,/^## /p' "$DOCS" | sed -n '/^```sh$/,/^```$/p' | grep '^mlw ')
check "docs/cli.md has jq examples" test "$(wc -l <<<"$examples")" -ge 5
while IFS= read -r example; do
  out=$(bash -o pipefail -c "$example" 2>/dev/null)
  code=$?
  expect_eq "jq example exits 0: $example" "$code" 0
  check "jq example prints something: $example" test -n "$out"
  case "$example" in
    *'"Failed"'*) expect_contains "the failed run is listed" "$out" "$FAILED_RUN" ;;
    *'"docker"'*) expect_eq "the docker targets" "$out" "docker" ;;
    *'.status'*) expect_eq "submit's status" "$out" "Completed" ;;
  esac
done <<<"$examples"

## Completion: bash (the script's function, as bash calls it)
comp_bash() {
  bash --norc -c 'source <(mlw completion bash); COMP_WORDS=(mlw "$@"); COMP_CWORD=$#; _mlw
    printf "%s\n" "${COMPREPLY[@]}"' _ "$@" | sort
}
expect_eq "bash: commands" "$(comp_bash hist)" "history"
expect_eq "bash: subcommands" "$(comp_bash history l)" $'last\nlist\nlogs'
expect_eq "bash: run ids for -r" "$(comp_bash history info -r '')" "$("$MLW" history list --top 0 -o tsv | cut -f1 | sort)"
expect_eq "bash: run configurations for -c" "$(comp_bash experiment submit -c '')" \
  "$(ls aml_config/*.runconfig | xargs -n1 basename | sed 's/\.runconfig$//' | sort)"
expect_eq "bash: targets for -n" "$(comp_bash computetarget show -n '')" $'cluster\ndocker\nlocal\nrd'
expect_eq "bash: formats for -o" "$(comp_bash -o j)" $'json\njsonc'
expect_eq "bash: config keys" "$(comp_bash config set defaults.)" $'defaults.output\ndefaults.target'
expect_eq "bash: config values" "$(comp_bash config set core.no_color '')" $'false\ntrue'
expect_eq "bash: options" "$(comp_bash history list --st)" "--status"
expect_eq "bash: global options below a command" "$(comp_bash history list --only)" "--only-show-errors"
expect_eq "bash: the script is a file" "$(comp_bash experiment submit -c local tra)" "train.py"
expect_eq "bash: the script's own words are files" "$(comp_bash experiment submit -c local train.py --ep)" ""
expect_eq "bash: shells" "$(comp_bash completion '')" $'bash\nfish\nzsh'

ATTACH_RD=$(comp_bash computetarget attach remotedocker --)
expect_contains "bash: attach remotedocker -- offers --password" "$ATTACH_RD" "--password"
expect_contains "… and -w's long form's sibling --password-stdin" "$ATTACH_RD" "--password-stdin"
expect_contains "… and --base-image (a remotedocker option)" "$ATTACH_RD" "--base-image"
expect_not_contains "… not slurm's --partition (only that kind's options)" "$ATTACH_RD" "--partition"
expect_not_contains "… not attach's 2017 --type" "$ATTACH_RD" "--type"
expect_eq "bash: attach remotedocker -w is offered" "$(comp_bash computetarget attach remotedocker -w)" "-w"
expect_error "a parse error reads as mlw's own line, in lower case" 2 \
  "mlw: error: the following argument was not expected: extra-word" history list extra-word

## Completion of names a cloned project chose (issue 33): each inserted as one quoted word
# A project folder whose name is shell syntax; its run ids carry the name. The completed command
# line is then run by bash, as Enter would: nothing may run, and the id arrives whole.
EVIL_DIR="$WORK/a\$(touch\${IFS}PWNED)b c"
shell_would_run "completion: the folder name as shell text" "cd '$WORK' && echo a\$(touch\${IFS}PWNED)b >/dev/null" "$WORK/PWNED"
mkdir -p "$EVIL_DIR" && cp -r aml_config .amlignore train.py "$EVIL_DIR/"
(cd "$EVIL_DIR" && "$MLW" -q experiment submit -c local train.py --epochs 1 >/dev/null)
EVIL_RUN=$(cd "$EVIL_DIR" && "$MLW" history last -o json | jq -r .run_id)
check "completion: the hostile project's run id has shell syntax" grep -q '\$(' <<<"$EVIL_RUN"
completed=$(cd "$EVIL_DIR" && comp_bash history info -r '')
expect_eq "completion: one candidate for the one run" "$(wc -l <<<"$completed")" 1
said=$(cd "$WORK" && bash --norc -c "printf '%s\n' $completed" 2>&1)
expect_eq "completion: the inserted word is the run id, whole" "$said" "$EVIL_RUN"
check "completion: the inserted word ran nothing" test ! -e "$WORK/PWNED"

## Completion: fish (complete -C, fish's own answer for a command line)
comp_fish() { HOME="$WORK" fish --no-config -c "mlw completion fish | source; complete -C '$1'" | cut -f1 | sort; }
expect_eq "fish: commands" "$(comp_fish 'mlw hist')" "history"
expect_eq "fish: run configurations" "$(comp_fish 'mlw experiment submit -c ')" \
  "$(comp_bash experiment submit -c '')"
expect_eq "fish: run ids" "$(comp_fish "mlw history logs -r $FAILED_RUN")" "$FAILED_RUN"

## Completion: zsh, typed into a real zsh under tmux
TMUX_SOCKET="mlwconv$$"
tmux_() { tmux -L "$TMUX_SOCKET" "$@"; }
cleanup_tmux() { tmux_ kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT
TERM=xterm tmux_ new-session -d -x 160 -y 40 -c "$WORK/conv" \
  "env PATH='$PATH' HOME='$WORK' TERM=xterm zsh -f"
# screen_has TEXT: the pane shows TEXT within 5 s.
screen_has() {
  local _
  for _ in $(seq 1 50); do
    tmux_ capture-pane -p | grep -qF -- "$1" && return 0
    sleep 0.1
  done
  tmux_ capture-pane -p >&2
  return 1
}
tmux_ send-keys 'autoload -U compinit && compinit -u && source <(mlw completion zsh) && echo $((6 * 7))-loaded' Enter
check "zsh: the completion loads" screen_has "42-loaded"
tmux_ send-keys 'mlw hist' Tab
check "zsh: a command completes" screen_has "mlw history"  # (the pane drops trailing spaces)
tmux_ send-keys C-u 'mlw experiment submit -c ' Tab
check "zsh: run configurations are offered (docker)" screen_has "docker"
check "zsh: run configurations are offered (local)" screen_has "local"
tmux_ send-keys C-u "mlw history logs -r ${FAILED_RUN:0:${#FAILED_RUN}-1}" Tab
check "zsh: a run id completes" screen_has "mlw history logs -r $FAILED_RUN"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
