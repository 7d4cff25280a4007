/* Placeholder until implemented. */
#include <stdio.h>

#include "commands.h"

int cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "pdq info: not implemented yet\n");
    return 1;
}
