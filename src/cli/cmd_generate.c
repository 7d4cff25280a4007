/* Placeholder until implemented. */
#include <stdio.h>

#include "commands.h"

int cmd_generate(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "pdq generate: not implemented yet\n");
    return 1;
}
