/* Subcommands: each lives in its own cmd_<name>.c and returns the process exit status. */
#ifndef PDQ_CLI_COMMANDS_H
#define PDQ_CLI_COMMANDS_H

typedef int (*pdq_cmd_fn)(int argc, char **argv);

typedef struct {
    const char *name;
    pdq_cmd_fn fn;
    const char *summary;
} pdq_command;

int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_ppl(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_gptq_matrix(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_circle_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_eval(int argc, char **argv);
/* pdq inspect FILE.circle (src/cli/inspect_circle.c). */
int cli_inspect_circle(const char *path);
int cli_inspect_circle_json(const char *path); /* the same with --json (inspect_circle_json.c) */
/* pdq inspect EXPORT_DIR: per-layer attention types and K/V input shapes (inspect_export.c). */
int cli_inspect_export(const char *dir, int json);
/* pdq generate/verify --circle OUTDIR (src/cli/circle_cli.c). */
int cmd_generate_circle(int argc, char **argv);
int cmd_verify_circle(int argc, char **argv);
/* pdq generate --static ...: generation through the static runtime (cmd_generate delegates). */
int cmd_generate_static(int argc, char **argv);

#endif
