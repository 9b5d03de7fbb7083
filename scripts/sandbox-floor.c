/*
 * The floor under `gavel exec --lang python`: the isolation gavel's sandbox
 * gives a run as root, done in C with nothing else, to tell what the
 * isolation itself costs from what gavel's own layers cost
 * (scripts/bench-sandbox-parts.sh, BENCHMARKS.md). Not part of gavel.
 *
 * For each call: a working folder of its own with the program in it, owned
 * by a uid of its own; new network, mount, PID and IPC namespaces; the
 * mount tree private, fresh tmpfs on /tmp, /var/tmp, /dev/shm and
 * /run/lock, the folder of working folders covered by a tmpfs with the
 * run's folder put back as an overlay, a /proc of the namespace; the first
 * process of the namespace forks the program with the run's limits
 * (address space, processes, CPU, file size, open files) and user, reaps
 * it and kills what is left; then the folder is removed. The program is
 * `python3 -I prog.py` with gavel's environment.
 *
 *   cc -O2 -o sandbox-floor scripts/sandbox-floor.c && ./sandbox-floor PROG.py
 *
 * Run as root. The exit code is the program's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASE "/var/lib/gavel-floor"
#define UID 2046000000

static char dir[256], lower[300];

static void die(const char *what) {
	perror(what);
	_exit(125);
}

static void limit(int res, rlim_t v) {
	struct rlimit l = {v, v};
	if (setrlimit(res, &l) != 0)
		die("setrlimit");
}

/* first is the namespace's first process. */
static int first(void) {
	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		die("private mounts");
	const char *shared[] = {"/tmp", "/var/tmp", "/dev/shm", "/run/lock"};
	for (int i = 0; i < 4; i++) {
		struct stat st;
		if (stat(shared[i], &st) == 0 && S_ISDIR(st.st_mode) &&
		    mount("tmpfs", shared[i], "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777") != 0)
			die("tmpfs");
	}
	/* The real folder, reached through a descriptor once the tmpfs covers it. */
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die("working folder");
	if (mount("tmpfs", BASE, "tmpfs", MS_NOSUID | MS_NODEV, "size=268435456,mode=0711") != 0)
		die("tmpfs over the folders");
	if (mkdir(BASE "/.upper", 0700) || mkdir(BASE "/.work", 0700) || mkdir(dir, 0700) ||
	    chown(BASE "/.upper", UID, UID))
		die("overlay folders");
	char opts[512];
	snprintf(opts, sizeof opts, "lowerdir=/proc/self/fd/%d,upperdir=" BASE "/.upper,workdir=" BASE "/.work", fd);
	if (mount("overlay", dir, "overlay", MS_NOSUID | MS_NODEV, opts) != 0)
		die("overlay");
	close(fd);
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
		die("proc");
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		limit(RLIMIT_NPROC, 64);
		limit(RLIMIT_CPU, 20);
		limit(RLIMIT_FSIZE, 256 << 20);
		limit(RLIMIT_NOFILE, 256);
		if (chdir(dir) || setgroups(0, NULL) || setgid(UID) || setuid(UID))
			die("user");
		limit(RLIMIT_AS, 2048ul << 20);
		char *argv[] = {"/usr/bin/python3", "-I", "prog.py", NULL};
		char *envp[] = {"PYTHONDONTWRITEBYTECODE=1", "PYTHONHASHSEED=0", "PATH=/usr/local/bin:/usr/bin:/bin", NULL};
		execve(argv[0], argv, envp);
		die("exec");
	}
	int st = 0;
	while (waitpid(p, &st, 0) < 0)
		;
	kill(-1, SIGKILL);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: sandbox-floor PROG.py\n");
		return 2;
	}
	mkdir(BASE, 0711);
	snprintf(dir, sizeof dir, BASE "/run-%d", getpid());
	snprintf(lower, sizeof lower, "%s/prog.py", dir);
	if (mkdir(dir, 0700) || chown(dir, UID, UID))
		die("working folder");
	FILE *in = fopen(argv[1], "r"), *out = fopen(lower, "w");
	if (!in || !out)
		die("program");
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	fclose(out);
	chown(lower, UID, UID);
	pid_t p = syscall(SYS_clone, CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | SIGCHLD, 0, 0, 0, 0);
	if (p < 0)
		die("clone");
	if (p == 0)
		first();
	int st = 0;
	while (waitpid(p, &st, 0) < 0)
		;
	unlink(lower);
	rmdir(dir);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
