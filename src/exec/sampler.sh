# shellcheck shell=sh
# The GPU sampler of one run (docs/gpus.md, "Is the run using its GPUs?"): `sh -c` of this
# file's body in the run folder, as a process group of its own (setsid), then "mlw-sample" and
#   AWK      exec/sampler.awk's program
#   GPUS     the run's GPUs, as the machine numbers them ("1,3"); for a container given GPUs
#            without a lease, "all" or its `gpus` key's indexes and UUIDs
#   SECONDS  between samples (gpuSampleSeconds)
#   WARN     minutes after which a GPU never used is said (0: never)
#   POLICY   idleGpu as BELOW:MINUTES:ACTION ("": none)
#   TICKET   the lease's ticket folder ("": none)
#   ROOT     the run's first process on this machine (its CPU and memory: the tree under it)
#   METRICS  the file the samples go to (the run's metrics.jsonl)
#   STOP…    the words that stop the run when the policy says stop (then, after 10 s, ROOT is
#            killed)
# and, in its environment, MLW_SAMPLE_NODE: a Slurm job's node after its first (its series are
# sys/nodeN/…), and MLW_NVML: the NVML reader as mlw packs it (nvml_reader_packed: "ID:" then
# exec/nvml_reader.c's program gzipped, in base64).
# One reader streams every sample into one awk for the run's life: no process is started per
# sample. The reader is NVML itself where mlw's NVML reader runs here (the same architecture as
# mlw's build, a glibc as new, libnvidia-ml.so.1 that loads and initialises; kept as
# ~/.mlw/bin/mlw-nvml-reader-ID), else one `nvidia-smi -lms`: both print the same lines. A stream
# that ends, or that gives no sample for three intervals (10 s at least: a hung reader), is said
# in gpu_notes and started again, three times at most; then sampling stops, said there too (and
# gpu.end made). The run goes on whatever happens here.
awk_program=$1
gpus=$2
every=$3
warn=$4
policy=$5
ticket=$6
root=$7
metrics=$8
shift 8
# The machine's nvidia-smi and NVML, numbering GPUs as the machine does (not the run's view).
unset NVIDIA_VISIBLE_DEVICES CUDA_VISIBLE_DEVICES
packed=${MLW_NVML:-}
unset MLW_NVML
case "$every" in '' | *[!0-9]*) every=1 ;; esac
below=
idle=0
action=warn
if [ -n "$policy" ]; then
  IFS=: read -r below idle action <<EOF
$policy
EOF
fi
# note TEXT: one line for the run's record.
note() { printf '%s\n' "$*" >>gpu_notes; }
now() { date -u +%H:%M:%S; }
smi() { TZ=UTC0 nvidia-smi "$@"; }
uuids=$(timeout 10 nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>/dev/null |
  tr '\n' ';')
# "all", or UUIDs among the indexes: the machine's numbers.
case "$gpus" in
  *[!0-9,]*)
    gpus=$(printf '%s' "$uuids" | awk -v want="$gpus" 'BEGIN { RS = ";"; FS = ", *" }
      $1 ~ /^[0-9]+$/ { index_of[$2] = $1; all = all "," $1 }
      END {
        if (want == "all") { print substr(all, 2); exit }
        n = split(want, w, ",")
        for (i = 1; i <= n; i++) {
          k = w[i] ~ /^[0-9]+$/ ? w[i] : index_of[w[i]]
          if (k != "") out = out "," k
        }
        print substr(out, 2)
      }')
    if [ -z "$gpus" ]; then
      note "GPU sampling is off: nvidia-smi on this machine listed none of the run's GPUs"
      : >gpu.end
      exit 0
    fi
    ;;
esac
# nvml_reader: the NVML reader's path where it runs here for the run's GPUs, else nothing.
nvml_reader() {
  case "$packed" in [0-9a-f]*:?*) ;; *) return 0 ;; esac
  [ -n "${HOME:-}" ] || return 0
  r=$HOME/.mlw/bin/mlw-nvml-reader-${packed%%:*}
  if [ ! -x "$r" ]; then
    mkdir -p "$HOME/.mlw/bin" 2>/dev/null || return 0
    if ! { printf '%s' "${packed#*:}" | base64 -d 2>/dev/null | gzip -dc >"$r.$$" 2>/dev/null &&
      chmod 755 "$r.$$" && mv -f "$r.$$" "$r"; }; then
      rm -f "$r.$$"
      return 0
    fi
  fi
  timeout 10 "$r" --probe "$gpus" 2>gpu.probe && printf '%s\n' "$r"
}
reader=$(nvml_reader)
packed=
source=nvidia-smi
[ -z "$reader" ] || source=NVML
start=$(date +%s)
tck=$(getconf CLK_TCK 2>/dev/null) || tck=100
page=$(getconf PAGESIZE 2>/dev/null) || page=4096
check=$((every * 3))
[ "$check" -ge 10 ] || check=10
mawk_lines=
awk -W interactive 'BEGIN { }' </dev/null >/dev/null 2>&1 && mawk_lines='-W interactive'
# The minutes as seconds, once (awk does the arithmetic of fractions).
warn_s=$(awk -v m="$warn" 'BEGIN { print m * 60 }')
idle_s=$(awk -v m="$idle" 'BEGIN { print m * 60 }')
tries=0
while :; do
  rm -f gpu.hung
  # shellcheck disable=SC2086 # mawk_lines is none or two words
  {
    if [ -n "$reader" ]; then
      "$reader" "$((every * 1000))" "$gpus" 2>>gpu.err &
    else
      smi --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu \
        --format=csv,noheader,nounits -lms "$((every * 1000))" -i "$gpus" 2>>gpu.err &
    fi
    echo $! >gpu.smi
    wait $!
    echo $? >gpu.smi_code
  } | awk $mawk_lines -v gpus="$gpus" -v start="$start" -v tries="$tries" \
    -v warn="$warn_s" -v uuids="$uuids" -v below="${below:-0}" -v idle="$idle_s" \
    -v action="$action" -v metrics="$metrics" -v ticket="$ticket" -v root="$root" \
    -v tck="$tck" -v page="$page" -v node="${MLW_SAMPLE_NODE:-}" -v source="$source" \
    "$awk_program" &
  awk_pid=$!
  # The watch: a stream that gives no sample for $check s is ended (its reader too).
  (
    last=
    while sleep "$check"; do
      b=
      { read -r b _ <gpu.beat; } 2>/dev/null
      if [ "$b" = "$last" ]; then
        : >gpu.hung
        kill "$(cat gpu.smi 2>/dev/null)" "$awk_pid" 2>/dev/null
        exit 0
      fi
      last=$b
    done
  ) </dev/null >/dev/null 2>&1 &
  watch=$!
  wait "$awk_pid"
  code=$?
  kill "$watch" 2>/dev/null
  if [ "$code" = 4 ]; then
    kill "$(cat gpu.smi 2>/dev/null)" 2>/dev/null
    : >gpu.end
    exit 0
  fi
  if [ "$code" = 3 ]; then
    # The policy stopped the run: its words, then ROOT itself after 10 s.
    "$@" >/dev/null 2>&1
    i=0
    while [ "$i" -lt 100 ] && kill -0 "$root" 2>/dev/null; do
      sleep 0.1
      i=$((i + 1))
    done
    kill -KILL "$root" 2>/dev/null
    exit 0
  fi
  kill "$(cat gpu.smi 2>/dev/null)" 2>/dev/null
  tries=$((tries + 1))
  if [ -e gpu.hung ]; then
    why="$source gave no sample for $check s"
  else
    why="$source ended (exit $(cat gpu.smi_code 2>/dev/null || echo '?')$(
      head -c 200 gpu.err 2>/dev/null | tr -c ' -~' ' ' | sed 's/^./: &/'))"
  fi
  if [ "$tries" -ge 3 ]; then
    note "GPU sampling stopped at $(now): $why, a third time; the run went on without samples"
    : >gpu.end
    exit 0
  fi
  note "GPU sampling: $why at $(now): no samples until it starts again"
  sleep "$check"
done
