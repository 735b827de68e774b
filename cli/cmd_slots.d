/work/wt-anneal/cli/cmd_slots.o: cli/cmd_slots.c analysis/an_slots.h \
 core/rn_error.h core/rn_model.h core/rn_config.h core/rn_error.h \
 core/rn_params.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 cli/cli.h core/rn_state.h core/rn_atomic.h core/rn_modelfile.h \
 core/rn_model.h core/rn_rows.h core/rn_tokenizer.h core/rn_file.h
analysis/an_slots.h:
core/rn_error.h:
core/rn_model.h:
core/rn_config.h:
core/rn_error.h:
core/rn_params.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
cli/cli.h:
core/rn_state.h:
core/rn_atomic.h:
core/rn_modelfile.h:
core/rn_model.h:
core/rn_rows.h:
core/rn_tokenizer.h:
core/rn_file.h:
