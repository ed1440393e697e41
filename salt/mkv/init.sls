# mkv has no states of its own: the roles are mkv.volume (storage nodes) and
# mkv.master (the head node), both mapped in top.sls.
{}
