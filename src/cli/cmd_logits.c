/* Placeholder until implemented. */
#include <stdio.h>

#include "commands.h"

int cmd_logits(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "pdq logits: not implemented yet\n");
    return 1;
}
