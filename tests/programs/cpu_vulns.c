/*
 * Prints /sys/devices/system/cpu/vulnerabilities/ as "vuln NAME: STATUS"
 * lines: which CPU bugs the kernel found and which mitigations it turned on
 * (tests/boot/test_distro.py compares them with what the flavour and CPU
 * model must have). Exit 1 when the directory cannot be read.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#define VULN_DIR "/sys/devices/system/cpu/vulnerabilities"

int main(void)
{
	DIR *dir = opendir(VULN_DIR);
	struct dirent *d;
	int n = 0;

	if (!dir) {
		perror(VULN_DIR);
		return 1;
	}
	while ((d = readdir(dir))) {
		char path[512], line[256] = "";
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", VULN_DIR, d->d_name);
		f = fopen(path, "r");
		if (!f || !fgets(line, sizeof(line), f)) {
			printf("vuln %s: (unreadable)\n", d->d_name);
		} else {
			line[strcspn(line, "\n")] = '\0';
			printf("vuln %s: %s\n", d->d_name, line);
		}
		if (f)
			fclose(f);
		n++;
	}
	closedir(dir);
	printf("vulns: %d\n", n);
	return n ? 0 : 1;
}
