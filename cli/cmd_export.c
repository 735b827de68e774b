/* cmd_export.c — `ramtrace export`: write a run's accesses as an
 * oracleGeneral binary trace or CSV (analysis/an_export.h), or traces as a
 * Parquet dataset (export_parquet.c). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_export.h"
#include "an_load.h"
#include "an_runset.h"
#include "cli.h"
#include "export_parquet.h"
#include "rn_atomic.h"

const char cmd_export_summary[] = "export a trace run for cache simulators (oracleGeneral, CSV) or traces as Parquet";

static const char usage[] =
    "usage: ramtrace export TRACE.db... --format oraclegeneral|csv -o FILE [options]\n"
    "       ramtrace export TRACE.db... --format parquet -o DIR [options]\n"
    "\n"
    "Write a run's accesses in replay order (pos, layer, head, op, rank).\n"
    "oraclegeneral: libCacheSim's binary layout, 24-byte little-endian records\n"
    "  u32 time (token position), u64 object id, u32 size ((d_v+1)*4 bytes),\n"
    "  i64 next (1-based index of the next access to the object, -1 if none);\n"
    "  object id = layer << 40 | head << 32 | slot.\n"
    "csv: index,time,layer,head,slot,op,obj_id,next.\n"
    "Several runs (several files, or --all-runs) of one model: one stream, file\n"
    "by file, each file's runs by id; time counts on over the runs, and the\n"
    "run's place in that order k (0, 1, ...) is the object id's top 16 bits,\n"
    "k << 48 (docs/analysis.md).\n"
    "parquet: every run of every TRACE.db (or --run R of each) as a new dataset\n"
    "  directory DIR: DIR/events/run=N/layer=L/part-0.parquet with columns head,\n"
    "  pos, op, rank, slot, addr, weight, token, and DIR/runs/runs.parquet\n"
    "  (docs/analysis.md); zstd pages; DIR appears complete or not at all.\n"
    "\n"
    "options:\n"
    "  -f, --format F        oraclegeneral (default), csv or parquet\n"
    "  -o, --output FILE     output file (required; written atomically); - is stdout;\n"
    "                        for parquet a directory that must not exist\n"
    "      --ops OPS         rw (default), r or w\n"
    "      --layer L         only layer L (default all)\n"
    "      --head H          only head H (default all)\n"
    "      --run R           run id in each file (default: the latest; parquet:\n"
    "                        every run)\n"
    "      --all-runs        every run of every file\n"
    "  -j, --threads N       parquet: layer files written at once (default: the\n"
    "                        free cores); the other formats run on one thread\n"
    "  -h, --help            this text\n"
    "\n"
    "example: ramtrace export trace.db -o trace.oracleGeneral.bin\n"
    "         cachesim trace.oracleGeneral.bin oracleGeneral lru 1000\n";

int cmd_export(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) { printf("%s", usage); return 0; }
    enum { O_RUN = 256, O_LAYER, O_HEAD, O_OPS, O_ALL };
    static const struct option opts[] = {
        { "run", required_argument, 0, O_RUN }, { "layer", required_argument, 0, O_LAYER },
        { "head", required_argument, 0, O_HEAD }, { "ops", required_argument, 0, O_OPS },
        { "format", required_argument, 0, 'f' }, { "output", required_argument, 0, 'o' },
        { "threads", required_argument, 0, 'j' }, { "all-runs", no_argument, 0, O_ALL }, { 0, 0, 0, 0 } };
    long run = 0, layer = -1, head = -1, threads = 0;
    int fmt = AN_EXPORT_ORACLEGENERAL, ops = RN_OPS_BOTH, c, all = 0;
    const char *outp = NULL;
    rn_error err = { 0 };
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:j:", opts, NULL)) != -1) {
        int rc = RN_OK;
        switch (c) {
        case O_RUN: rc = cli_parse_long("--run", optarg, 1, INT32_MAX, &run, &err); break;
        case O_LAYER: rc = cli_parse_long("--layer", optarg, 0, RN_MAX_LAYERS - 1, &layer, &err); break;
        case O_HEAD: rc = cli_parse_long("--head", optarg, 0, RN_MAX_HEADS - 1, &head, &err); break;
        case O_OPS: rc = rn_ops_parse(optarg, &ops, &err); break;
        case O_ALL: all = 1; break;
        case 'f': rc = an_export_format_parse(optarg, &fmt, &err); break;
        case 'o': outp = optarg; break;
        case 'j': rc = cli_parse_long("--threads", optarg, 1, 1024, &threads, &err); break; /* one thread for now */
        case ':': return cli_usage_error(argv[0], "%s needs a value", argv[optind - 1]);
        default: return cli_usage_error(argv[0], "unknown option '%s'", argv[optind - 1]);
        }
        if (rc) return cli_usage_error(argv[0], "%s", err.msg);
    }
    if (all && run) return cli_usage_error(argv[0], "--run and --all-runs exclude each other");
    if (fmt == AN_EXPORT_PARQUET)
        return cmd_export_parquet(argv[0], argc - optind, argv + optind, outp, run, (int)layer, (int)head, ops, threads);
    if (optind >= argc) return cli_usage_error(argv[0], "expected one or more trace databases");
    if (!outp) return cli_usage_error(argv[0], "-o FILE is required");
    struct stat ost;
    if (stat(outp, &ost) == 0 && S_ISDIR(ost.st_mode)) {
        rn_seterr(&err, RN_EINPUT, "%s: is a directory (-o names the output file)", outp);
        return cli_fail(&err);
    }
    cli_install_signals();
    an_runset rs;
    an_runsel sel = { run, all };
    int rc = an_runset_open((const char *const *)argv + optind, argc - optind, sel, 1, &rs, &err);
    if (rc) return cli_fail(&err);
    if ((rc = an_runset_check_head(&rs, (int)layer, (int)head, &err))) goto out;
    /* `-o -`: CSV, or the oracleGeneral stream when stdout is not a terminal */
    if (!strcmp(outp, "-") && fmt != AN_EXPORT_CSV && isatty(1)) {
        rc = rn_seterr(&err, RN_EINPUT, "-o -: will not write binary oracleGeneral records to a terminal");
        goto out;
    }
    for (int i = 0; i < rs.n && !rc; i++) rc = rn_atomic_check_not_input(rs.r[i].path, outp, &err);
    rn_atomic_file af;
    if (rc || (rc = rn_atomic_open_text(&af, outp, &err))) goto out;
    /* run after run: one run's events in memory at a time */
    an_export_part pt = { 0, 0, 0, 1 };
    for (int i = 0; i < rs.n && !rc && !cli_stop_flag; i++) {
        tr_event *ev = NULL;
        size_t n = 0;
        pt.seq = (uint64_t)i;
        if (!(rc = an_run_load(&rs.r[i], (int)layer, (int)head, ops, &ev, &n, &err)))
            rc = an_export_write_part(af.f, fmt, ev, n, &rs.r[i].run.cfg, ops, &pt, &cli_stop_flag, &err);
        free(ev);
        pt.index0 += n;
        pt.time0 += rs.r[i].run.n_tokens;
        pt.header = 0;
    }
    if (rc || cli_stop_flag) {
        rn_atomic_abort(&af);
        if (cli_stop_flag) rc = rn_seterr(&err, RN_EINTR, "export: interrupted; %s not written", outp);
        else if (rc == RN_EIO) rn_preferr(&err, "%s", outp);
        goto out;
    }
    if ((rc = rn_atomic_commit(&af, &err))) goto out;
    char what[64];
    cli_info("export: %s, %llu accesses to %s\n", an_runset_describe(&rs, what, sizeof what),
             (unsigned long long)pt.index0, outp);
out:
    an_runset_close(&rs);
    return rc ? cli_fail(&err) : 0;
}
