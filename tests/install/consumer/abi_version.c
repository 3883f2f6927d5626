/* Print the installed libkelt.so's version and ABI version; fail unless they match the
 * installed headers (kelt/version.h, kelt.h) this program was compiled with. */
#include <stdio.h>
#include <string.h>

#include "kelt.h"
#include "kelt/version.h"

int main(void) {
  printf("kelt_version %s kelt_abi_version %u\n", kelt_version(),
         (unsigned)kelt_abi_version());
  if (strcmp(kelt_version(), KELT_VERSION_STRING) != 0) {
    fprintf(stderr, "libkelt.so is %s, kelt/version.h says %s\n", kelt_version(),
            KELT_VERSION_STRING);
    return 1;
  }
  if (kelt_abi_version() < KELT_ABI_VERSION) {
    fprintf(stderr, "libkelt.so has ABI %u, kelt.h needs %u\n",
            (unsigned)kelt_abi_version(), (unsigned)KELT_ABI_VERSION);
    return 1;
  }
  return 0;
}
