/* Placeholder until implemented. */
#include <stdio.h>

#include "commands.h"

int cmd_tokenize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "pdq tokenize: not implemented yet\n");
    return 1;
}
