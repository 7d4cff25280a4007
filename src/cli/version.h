/* The version `pdq --version` prints (bump with a release). */
#ifndef PDQ_CLI_VERSION_H
#define PDQ_CLI_VERSION_H

#define PDQ_CLI_VERSION "0.1.0"

#endif
