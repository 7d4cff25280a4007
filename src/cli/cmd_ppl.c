/* Placeholder until implemented. */
#include <stdio.h>

#include "commands.h"

int cmd_ppl(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "pdq ppl: not implemented yet\n");
    return 1;
}
