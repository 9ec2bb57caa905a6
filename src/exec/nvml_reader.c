/* The GPU sampler's NVML reader (docs/gpus.md, "Is the run using its GPUs?"): a program that mlw
 * builds with itself and that sampler.sh runs on the machine of a run's GPUs, where it can (the
 * same architecture, a glibc at least as new as the build's, libnvidia-ml.so.1 that loads and
 * initialises); elsewhere the sampler reads one `nvidia-smi -lms` stream instead. It prints what
 * that stream prints, so that one reader (sampler.awk) serves both:
 *   mlw-nvml-reader MS GPUS     every MS milliseconds until killed, a line per GPU of GPUS
 *                               (indexes as NVML and nvidia-smi number them, "1,3"):
 *                               "YYYY/MM/DD HH:MM:SS.mmm, INDEX, UTIL, MEM_USED, MEM_TOTAL,
 *                               POWER, TEMP" (UTC; %, MiB, MiB, W, degrees C), a field NVML
 *                               cannot give in brackets as nvidia-smi writes it ("[GPU is lost]")
 *   mlw-nvml-reader --probe GPUS   exit 0 where NVML gives a handle for each of GPUS, else 1
 *                               with the reason on stderr
 * Only libc and the dynamic loader: NVML is opened with dlopen, its functions found by name, so
 * nothing of NVIDIA's is needed to build it. Exit 2: bad words; 6: a GPU NVML does not know. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { k_max_gpus = 64, k_success = 0, k_not_supported = 3, k_gpu_is_lost = 15 };

typedef int nvml_result;
typedef void* nvml_device;
struct nvml_utilization {
  unsigned int gpu;
  unsigned int memory;
};
struct nvml_memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

/* NVML's functions this reader calls, as nvml.h declares them. */
static struct {
  nvml_result (*init)(void);
  nvml_result (*handle_by_index)(unsigned int, nvml_device*);
  nvml_result (*utilization)(nvml_device, struct nvml_utilization*);
  nvml_result (*memory)(nvml_device, struct nvml_memory*);
  nvml_result (*power)(nvml_device, unsigned int*);
  nvml_result (*temperature)(nvml_device, int, unsigned int*);
} nvml;

static unsigned int gpu_index[k_max_gpus];
static nvml_device gpu_handle[k_max_gpus];
static int gpu_count;

/* Reads "1,3" into gpu_index; 0 on anything else. */
static int parse_gpus(const char* text) {
  const char* p = text;
  gpu_count = 0;
  while (*p) {
    char* end = NULL;
    errno = 0;
    unsigned long k = strtoul(p, &end, 10);
    if (end == p || errno || k >= 4096 || gpu_count >= k_max_gpus) return 0;
    gpu_index[gpu_count++] = (unsigned int)k;
    if (*end == ',' && end[1])
      end++;
    else if (*end)
      return 0;
    p = end;
  }
  return gpu_count > 0;
}

static void* symbol(void* library, const char* name) {
  void* f = dlsym(library, name);
  if (!f) fprintf(stderr, "mlw-nvml-reader: libnvidia-ml.so.1 has no %s\n", name);
  return f;
}

/* Opens NVML and finds each GPU's handle; 0 (the reason on stderr) where it cannot. */
static int open_nvml(void) {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "mlw-nvml-reader: %s\n", dlerror());
    return 0;
  }
  *(void**)&nvml.init = symbol(library, "nvmlInit_v2");
  *(void**)&nvml.handle_by_index = symbol(library, "nvmlDeviceGetHandleByIndex_v2");
  *(void**)&nvml.utilization = symbol(library, "nvmlDeviceGetUtilizationRates");
  *(void**)&nvml.memory = symbol(library, "nvmlDeviceGetMemoryInfo");
  *(void**)&nvml.power = symbol(library, "nvmlDeviceGetPowerUsage");
  *(void**)&nvml.temperature = symbol(library, "nvmlDeviceGetTemperature");
  if (!nvml.init || !nvml.handle_by_index || !nvml.utilization || !nvml.memory || !nvml.power ||
      !nvml.temperature)
    return 0;
  nvml_result r = nvml.init();
  if (r != k_success) {
    fprintf(stderr, "mlw-nvml-reader: nvmlInit failed (NVML error %d)\n", r);
    return 0;
  }
  for (int i = 0; i < gpu_count; i++) {
    r = nvml.handle_by_index(gpu_index[i], &gpu_handle[i]);
    if (r != k_success) {
      fprintf(stderr, "mlw-nvml-reader: NVML knows no GPU %u (NVML error %d)\n", gpu_index[i], r);
      return -1;
    }
  }
  return 1;
}

/* A field that NVML could not give, in nvidia-smi's words. */
static const char* failure(nvml_result r) {
  if (r == k_not_supported) return "[Not Supported]";
  if (r == k_gpu_is_lost) return "[GPU is lost]";
  return "[Unknown Error]";
}

/* Prints one GPU's line of a sample taken at `at`. */
static void print_gpu(int i, const char* at) {
  nvml_device d = gpu_handle[i];
  struct nvml_utilization u = {0, 0};
  struct nvml_memory m = {0, 0, 0};
  unsigned int power = 0, temperature = 0;
  char util[32], used[32], total[32], watts[32], temp[32];
  nvml_result r = nvml.utilization(d, &u);
  snprintf(util, sizeof util, "%u", u.gpu);
  if (r != k_success) snprintf(util, sizeof util, "%s", failure(r));
  r = nvml.memory(d, &m);
  snprintf(used, sizeof used, "%llu", m.used / 1048576);
  snprintf(total, sizeof total, "%llu", m.total / 1048576);
  if (r != k_success) {
    snprintf(used, sizeof used, "%s", failure(r));
    snprintf(total, sizeof total, "%s", failure(r));
  }
  r = nvml.power(d, &power);
  snprintf(watts, sizeof watts, "%.2f", power / 1000.0);
  if (r != k_success) snprintf(watts, sizeof watts, "%s", failure(r));
  r = nvml.temperature(d, 0 /* NVML_TEMPERATURE_GPU */, &temperature);
  snprintf(temp, sizeof temp, "%u", temperature);
  if (r != k_success) snprintf(temp, sizeof temp, "%s", failure(r));
  printf("%s, %u, %s, %s, %s, %s, %s\n", at, gpu_index[i], util, used, total, watts, temp);
}

static long long now_ms(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Samples every `every` ms until stdout's reader is gone. */
static int stream(long every) {
  long long next = now_ms(CLOCK_MONOTONIC);
  for (;;) {
    struct timespec t;
    struct tm tm;
    char at[96];
    clock_gettime(CLOCK_REALTIME, &t);
    gmtime_r(&t.tv_sec, &tm);
    snprintf(at, sizeof at, "%04d/%02d/%02d %02d:%02d:%02d.%03ld", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, t.tv_nsec / 1000000);
    for (int i = 0; i < gpu_count; i++) print_gpu(i, at);
    if (fflush(stdout) != 0) return 0;
    next += every;
    long long wait = next - now_ms(CLOCK_MONOTONIC);
    if (wait < 0) {
      next = now_ms(CLOCK_MONOTONIC); /* behind (a slow NVML call): the next one a full step on */
      continue;
    }
    struct timespec pause = {(time_t)(wait / 1000), (long)(wait % 1000) * 1000000};
    while (nanosleep(&pause, &pause) != 0 && errno == EINTR) {
    }
  }
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--probe") == 0) {
    if (!parse_gpus(argv[2])) return 2;
    return open_nvml() == 1 ? 0 : 1;
  }
  char* end = NULL;
  long every = argc == 3 ? strtol(argv[1], &end, 10) : 0;
  if (argc != 3 || !end || *end || every < 100 || every > 60000 || !parse_gpus(argv[2])) {
    fprintf(stderr, "usage: mlw-nvml-reader MILLISECONDS GPUS | --probe GPUS\n");
    return 2;
  }
  int opened = open_nvml();
  if (opened <= 0) return opened < 0 ? 6 : 1;
  return stream(every);
}
