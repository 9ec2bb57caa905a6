# The GPU sampler's reader (docs/gpus.md, "Is the run using its GPUs?"), run by sampler.sh on
# the lines of one long-lived `nvidia-smi --query-gpu=timestamp,index,utilization.gpu,
# memory.used,memory.total,power.draw,temperature.gpu --format=csv,noheader,nounits -lms N`
# (its clock UTC), or of mlw's NVML reader, which prints the same (`source` names which). A sample is a line per GPU of the run; with each, the run's CPU and resident
# memory are read from /proc (the tree of processes under `root`, through each one's
# task/PID/children) without starting a process. Variables (-v):
#   gpus     the run's GPUs, as the machine numbers them ("1,3")
#   start    when the run started (s since 1970); `tries` the streams before this one
#   warn     s after the start at which a GPU never used, with no process of the run on it, is
#            said once (0: never); `uuids` "INDEX, UUID;…" to match nvidia-smi's processes
#   below    the idleGpu policy: utilisation (%) under which the run's GPUs are idle, for
#   idle     s in a row (0: no policy), then `action` warn or stop
#   metrics  the file it appends the samples to (JSON lines, as the script's metrics)
#   ticket   the lease's ticket folder ("": none), where `use` tells `computetarget gpus` each
#            GPU's last busy time
#   root tck page   the run's first process (0: none), clock ticks per s, bytes per page
#   node     a Slurm job's node after its first (its SLURM_NODEID): its series are
#            sys/nodeN/…; "" for the run's first node or machine
# Samples are averaged over a window that doubles after every 1,200 written (memory: its peak),
# so that a week-long run keeps some 11,000 per series. Exit 3: the policy stopped the run (the
# reason in gpu_stop); 4: the run's processes are gone. Notes for the record go to gpu_notes
# (20 at most), warnings to the log.
BEGIN {
  FS = ", *"
  n = split(gpus, order, ",")
  for (i = 1; i <= n; i++) want[order[i]] = 1
  m = split(uuids, pairs, ";")
  for (i = 1; i <= m; i++) {
    split(pairs[i], kv, ", *")
    if (kv[2] != "") uuid_of[kv[2]] = kv[1]
  }
  prefix = node != "" ? "node" node "/" : ""
  window = 1
  per_level = 1200
  notes = 0
  if (tck <= 0) tck = 100
  if (page <= 0) page = 4096
  if (source == "") source = "nvidia-smi"
}

# epoch TEXT: "YYYY/MM/DD HH:MM:SS.mmm" (UTC) in s since 1970; -1 when it is not that.
function epoch(text, d, c, y, mo, dd, era, yoe, doy, doe) {
  if (text !~ /^[0-9][0-9][0-9][0-9]\/[0-9][0-9]\/[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]/) {
    return -1
  }
  split(substr(text, 1, 10), d, "/")
  split(substr(text, 12), c, ":")
  y = d[1] - (d[2] <= 2)
  mo = d[2] + 0
  dd = d[3] + 0
  era = int(y / 400)
  yoe = y - era * 400
  doy = int((153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5) + dd - 1
  doe = yoe * 365 + int(yoe / 4) - int(yoe / 100) + doy
  return (era * 146097 + doe - 719468) * 86400 + c[1] * 3600 + c[2] * 60 + c[3]
}

function clock(t, s) {
  s = int(t) % 86400
  return sprintf("%02d:%02d:%02d UTC", int(s / 3600), int(s / 60) % 60, s % 60)
}

function note(text) {
  if (notes++ >= 20) return
  print text >>"gpu_notes"
  close("gpu_notes")
}

# say TEXT: a line of the run's log, and (without its "mlw: ") of its record.
function say(text) {
  log_line(text)
  sub(/^mlw: (warning: )?/, "", text)
  note(text)
}

function log_line(text) {
  print text >>"driver_log.txt"
  close("driver_log.txt")
}

function emit(name, value, at) {
  printf "{\"name\":\"sys/%s%s\",\"value\":%s,\"time\":%.3f}\n", prefix, name, value, at >>metrics
}

# walk P: adds the CPU ticks (its own and its waited-for children's) and resident pages of P
# and the processes under it; at most 4096 of them.
function walk(p, line, a, kids, k, i, f) {
  if (walked >= 4096) return
  f = "/proc/" p "/stat"
  if ((getline line <f) <= 0) {
    close(f)
    return
  }
  close(f)
  walked++
  sub(/^.*\) /, "", line)
  split(line, a, " ")
  cpu_ticks += a[12] + a[13] + a[14] + a[15]
  rss_pages += a[22]
  mine[p] = 1
  f = "/proc/" p "/task/" p "/children"
  if ((getline line <f) > 0) {
    k = split(line, kids, " ")
    for (i = 1; i <= k; i++) walk(kids[i])
  }
  close(f)
}

# value TEXT: a number of nvidia-smi's, or "" ([N/A], [Not Supported]); a GPU whose field says
# anything else in brackets ([GPU is lost], [Unknown Error]) is lost.
function value(text, k) {
  if (text ~ /^-?[0-9]+(\.[0-9]+)?$/) return text + 0
  if (text ~ /^\[(N\/A|Not Supported)\]$/) return ""
  if (text ~ /^\[/ && !(k in lost)) {
    lost[k] = text
    say(sprintf("mlw: warning: GPU %s stopped answering at %s (%s: %s; an Xid error?): " \
                "its samples end there", k, clock(now), source, text))
  }
  return ""
}

# own_processes: "," followed by the GPUs (indexes) on which nvidia-smi lists a process of the
# run, each followed by ",". One nvidia-smi, once (when the unused-GPU warning is due).
function own_processes(cmd, line, f, out) {
  out = ","
  cmd = "timeout 10 nvidia-smi --query-compute-apps=gpu_uuid,pid --format=csv,noheader 2>/dev/null"
  while ((cmd | getline line) > 0) {
    split(line, f, ", *")
    if ((f[2] in mine) && (f[1] in uuid_of)) out = out uuid_of[f[1]] ","
  }
  close(cmd)
  return out
}

function tick(i, k, u, cpu, low, any) {
  if (count == 0) return
  ticks++
  if (tries > 0 && ticks == 1) note("GPU sampling: samples again from " clock(now))
  # The run's processes.
  cpu_ticks = 0
  rss_pages = 0
  walked = 0
  split("", mine)
  if (root > 0) walk(root)
  # The run's processes gone (its monitor or supervisor killed before it could end this): ends,
  # exit 4, never left sampling for nothing.
  if (root > 0 && walked == 0 && ++gone >= 3) exit 4
  cpu = ""
  if (root > 0 && walked > 0 && last_cpu_at > 0 && now > last_cpu_at && cpu_ticks >= last_ticks) {
    cpu = (cpu_ticks - last_ticks) / tck / (now - last_cpu_at) * 100
  }
  if (root > 0 && walked > 0) {
    last_ticks = cpu_ticks
    last_cpu_at = now
  }
  # The window's sums, the idle rules on this sample.
  low = 1
  for (i = 1; i <= n; i++) {
    k = order[i]
    if (!(k in got) || (k in lost)) continue
    u = util[k]
    if (u != "") {
      sum_util[k] += u
      n_util[k]++
      if (u > 0) {
        used[k] = 1
        busy_at[k] = now
      }
      if (u >= below) low = 0
      any = 1
    }
    if (mem[k] != "" && (!(k in peak_mem) || mem[k] > peak_mem[k])) peak_mem[k] = mem[k]
    if (power[k] != "") { sum_power[k] += power[k]; n_power[k]++ }
    if (temp[k] != "") { sum_temp[k] += temp[k]; n_temp[k]++ }
    if (!(k in total_said) && total[k] != "") {
      emit("gpu" k "/mem_total", total[k], now)
      total_said[k] = 1
    }
  }
  if (cpu != "") { sum_cpu += cpu; n_cpu++ }
  if (walked > 0 && rss_pages * page / 1048576 > peak_rss) peak_rss = rss_pages * page / 1048576
  if (++in_window >= window) flush()
  write_use()
  printf "%d %.0f\n", ticks, now >"gpu.beat"
  close("gpu.beat")
  if (warn > 0 && !warned && now - start >= warn) say_unused()
  if (idle > 0) idle_rule(low, any)
  count = 0
  split("", got)
}

# write_use: each GPU's last busy time into the lease's ticket (`computetarget gpus` reads it).
# The ticket's folder goes with the lease: written only while it is there (awk ends on a file it
# cannot open for writing).
function write_use(i, k, text) {
  if (ticket == "" || ticks % 5 != 1 || (getline text <(ticket "/info")) < 0) return
  close(ticket "/info")
  text = ""
  for (i = 1; i <= n; i++) {
    k = order[i]
    text = text sprintf("%s %d %s %s\n", k, busy_at[k] + 0, util[k], mem[k])
  }
  printf "%s", text >(ticket "/use")
  close(ticket "/use")
}

# say_unused: once, the GPUs never used so far on which no process of the run is either (where
# others of its GPUs were used, it names them: the script may use fewer GPUs than it was given).
function say_unused(i, list, busy, text, c, a_list, some) {
  warned = 1
  list = ""
  for (i = 1; i <= n; i++) if (!used[order[i]] && !(order[i] in lost)) list = list "," order[i]
  if (list == "") return
  busy = own_processes()
  text = ""
  c = split(substr(list, 2), a_list, ",")
  for (i = 1; i <= c; i++) if (index(busy, "," a_list[i] ",") == 0) text = text "," a_list[i]
  if (text == "") return
  text = gpus_were(substr(text, 2), "have", "has") " not been used for " sprintf("%g", warn / 60) " min"
  some = ""
  for (i = 1; i <= n; i++) if (used[order[i]]) some = some "," order[i]
  if (some != "") {
    say("mlw: " text " (" gpus_were(substr(some, 2), "were", "was") ") — does the script use " \
        "every GPU it was given?")
    return
  }
  say("mlw: " text " — is the script running on the CPU?")
}

# gpus_were LIST PLURAL SINGULAR: "GPUs 0,1 PLURAL" or "GPU 0 SINGULAR".
function gpus_were(list, plural, singular) {
  return list ~ /,/ ? "GPUs " list " " plural : "GPU " list " " singular
}

# idle_rule LOW ANY: idleGpu on this sample (LOW: every GPU below `below`; ANY: one was read):
# warns once per low stretch, or stops the run (exit 3).
function idle_rule(low, any, text) {
  if (!low || !any) {
    low_since = 0
    acted = 0
  } else if (low_since == 0) {
    low_since = now
  } else if (!acted && now - low_since >= idle) {
    acted = 1
    text = sprintf("below %g%% for %g min (idleGpu)", below, idle / 60)
    if (action == "stop") {
      log_line(sprintf("mlw: stopping the run: GPU%s %s %s", (n > 1 ? "s" : ""), gpus, text))
      printf "stopped by idleGpu: GPU%s %s %s\n", (n > 1 ? "s" : ""), gpus, text >"gpu_stop"
      close("gpu_stop")
      stopping = 1
      exit 3
    }
    say(sprintf("mlw: warning: GPU%s %s %s", (n > 1 ? "s" : ""), gpus, text))
  }
}

# flush: writes the window's means (memory: its peak) at the time of its last sample.
function flush(i, k) {
  for (i = 1; i <= n; i++) {
    k = order[i]
    if (n_util[k] > 0) emit("gpu" k "/util", sprintf("%.4g", sum_util[k] / n_util[k]), now)
    if (k in peak_mem) emit("gpu" k "/mem_used", peak_mem[k], now)
    if (n_power[k] > 0) emit("gpu" k "/power", sprintf("%.4g", sum_power[k] / n_power[k]), now)
    if (n_temp[k] > 0) emit("gpu" k "/temp", sprintf("%.4g", sum_temp[k] / n_temp[k]), now)
    delete sum_util[k]; delete n_util[k]; delete peak_mem[k]
    delete sum_power[k]; delete n_power[k]; delete sum_temp[k]; delete n_temp[k]
  }
  if (n_cpu > 0) emit("cpu", sprintf("%.4g", sum_cpu / n_cpu), now)
  if (peak_rss > 0) emit("rss_mb", sprintf("%.1f", peak_rss), now)
  sum_cpu = n_cpu = peak_rss = 0
  fflush(metrics)
  in_window = 0
  if (++written % per_level == 0) window *= 2
}

{
  t = epoch($1)
  k = $2
  if (NF != 7 || t < 0 || !(k in want)) {
    if (bad++ == 0) {
      line = $0
      gsub(/[^ -~]/, "?", line)
      note("GPU sampling: " source " printed \"" substr(line, 1, 120) "\" where a sample was due")
    }
    next
  }
  if (k in got) tick()
  now = t
  got[k] = 1
  count++
  util[k] = value($3, k)
  mem[k] = value($4, k)
  total[k] = value($5, k)
  power[k] = value($6, k)
  temp[k] = value($7, k)
  if (count >= n) tick()
}

END {
  if (!stopping && in_window > 0) flush()
}
