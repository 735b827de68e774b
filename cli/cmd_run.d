/work/wt-anneal/cli/cmd_run.o: cli/cmd_run.c cli/cli.h core/rn_error.h \
 core/rn_state.h core/rn_config.h core/rn_error.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 core/rn_modelfile.h core/rn_model.h core/rn_params.h core/rn_runtime.h \
 core/rn_device.h core/rn_intervene.h core/rn_probe.h core/rn_state.h \
 core/rn_sampler.h core/rn_rng.h core/rn_tokenizer.h core/rn_file.h \
 trace/tr_record.h trace/tr_writer.h core/rn_config.h core/rn_probe.h \
 trace/tr_select.h
cli/cli.h:
core/rn_error.h:
core/rn_state.h:
core/rn_config.h:
core/rn_error.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
core/rn_modelfile.h:
core/rn_model.h:
core/rn_params.h:
core/rn_runtime.h:
core/rn_device.h:
core/rn_intervene.h:
core/rn_probe.h:
core/rn_state.h:
core/rn_sampler.h:
core/rn_rng.h:
core/rn_tokenizer.h:
core/rn_file.h:
trace/tr_record.h:
trace/tr_writer.h:
core/rn_config.h:
core/rn_probe.h:
trace/tr_select.h:
