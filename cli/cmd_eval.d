/work/wt-anneal/cli/cmd_eval.o: cli/cmd_eval.c cli/cli.h core/rn_error.h \
 core/rn_state.h core/rn_config.h core/rn_error.h core/rn_real.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h \
 /usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h \
 core/rn_device.h core/rn_modelfile.h core/rn_model.h core/rn_params.h \
 core/rn_rows.h core/rn_train_loop.h core/rn_adamw.h core/rn_tasks.h \
 core/rn_rng.h
cli/cli.h:
core/rn_error.h:
core/rn_state.h:
core/rn_config.h:
core/rn_error.h:
core/rn_real.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/cblas.h:
/usr/include/x86_64-linux-gnu/openblas-openmp/openblas_config.h:
core/rn_device.h:
core/rn_modelfile.h:
core/rn_model.h:
core/rn_params.h:
core/rn_rows.h:
core/rn_train_loop.h:
core/rn_adamw.h:
core/rn_tasks.h:
core/rn_rng.h:
