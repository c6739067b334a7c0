/*
 * flexcosim C-source FMU: saved states (part of cfmu_core.h, included at its end).  A
 * state is the whole ModelData between a magic and an FNV-1a 64 checksum; serialized, a
 * header with the model's GUID goes before it.  A state read back from a host (set or
 * deserialized) is checked field by field before it is used (state_bad).
 */
#ifndef FLEXCOSIM_CFMU_STATE_H
#define FLEXCOSIM_CFMU_STATE_H

/* Is `data` (a state deserialized or set back: bytes a host kept, which
   may have been edited, truncated at a field boundary or made by hand with a valid
   checksum) a state this model can be in?  0 if so (its derived numbers w then recomputed
   from its parameters), else 1 with why.  Every field is checked: a wrong substeps
   (2147483647 is a step of hours) or a NaN time (which would switch off the time check)
   must be refused here, as setting the integer or the start time refuses them. */
static int state_bad(ModelData *data, char *why, size_t n) {
    ModelData probe;
    char a[32], b[32], range[160], msg[400] = "";
    int k, w_zero = 1;
    if (!isfinite(data->time) || !isfinite(data->start_time)) {
        snprintf(why, n, "its time %s s or start time %s s is not finite",
                 shortest(a, sizeof a, data->time), shortest(b, sizeof b, data->start_time));
        return 1;
    }
    /* time = start_time + the sum of steps > 0: later than the start once a step is taken */
    if (data->steps < 0 || data->steps > (1LL << 53)
        || (data->steps == 0 ? data->time != data->start_time : !(data->time > data->start_time))) {
        snprintf(why, n, "its time %.17g s does not follow from its start %.17g s after %lld steps",
                 data->time, data->start_time, data->steps);
        return 1;
    }
    for (k = 0; k < N_VARS; k++) {
        const VarInfo *v = &VARS[k];
        int ok = v->type == VAR_STRING ? (data->s[k] >= 0 && data->s[k] < v->n_choices)
               : v->type == VAR_INTEGER ? in_range(v, (double)data->i[k])
               : v->causality == VAR_OUTPUT ? isfinite(data->r[k]) : in_range(v, data->r[k]);
        if (ok) continue;
        range_text(v, range, sizeof range);
        if (v->type == VAR_STRING)
            snprintf(why, n, "%s holds choice %d; it has %d", v->name, data->s[k], v->n_choices);
        else if (v->type == VAR_INTEGER)
            snprintf(why, n, "%s = %d is outside %s", v->name, data->i[k], range);
        else
            snprintf(why, n, "%s = %s is %s %s", v->name, shortest(a, sizeof a, data->r[k]),
                     v->causality == VAR_OUTPUT ? "not finite" : "outside", 
                     v->causality == VAR_OUTPUT ? "" : range);
        return 1;
    }
#define CHECK_FINITE(array, count, what)                                                   \
    for (k = 0; k < (count); k++)                                                          \
        if (!isfinite(data->array[k])) {                                                  \
            snprintf(why, n, "%s[%d] = %s is not finite", what, k,                        \
                     shortest(a, sizeof a, data->array[k]));                              \
            return 1;                                                                      \
        }
    CHECK_FINITE(x, N_X, "continuous state x")
    CHECK_FINITE(gill_q, N_X, "Gill's register")
    CHECK_FINITE(z, N_Z, "discrete state z")
    CHECK_FINITE(w, N_W, "derived number w")
#undef CHECK_FINITE
    if (data->auto_substeps < 1 || data->auto_substeps > FS_AUTO_MAX_SUBSTEPS) {
        snprintf(why, n, "auto_substeps = %lld is outside [1, %d]", data->auto_substeps,
                 FS_AUTO_MAX_SUBSTEPS);
        return 1;
    }
#if N_X > 0
    /* Gill's register is touched by Gill's steps only; with RK4 it stays zero */
    if (!method_is_gill(data))
        for (k = 0; k < N_X; k++)
            if (data->gill_q[k] != 0.0) {
                snprintf(why, n, "Gill's register is not zero, but the method is not Gill's");
                return 1;
            }
#endif
    /* w follows from the parameters (model_setup): equal to it bit for bit, or all zero
       in a state saved before initialization, when it was not made yet */
    probe = *data;
    if (model_setup(&probe, msg, sizeof msg)) {
        snprintf(why, n, "its parameters make no model: %s", msg);
        return 1;
    }
    for (k = 0; k < N_W; k++) if (data->w[k] != 0.0) w_zero = 0;
    if (!w_zero && memcmp(probe.w, data->w, sizeof probe.w) != 0) {
        snprintf(why, n, "its derived numbers w do not follow from its parameters");
        return 1;
    }
    if (model_validity(&probe, msg, sizeof msg) == 2) {
        snprintf(why, n, "it is beyond the model's hard limit: %s", msg);
        return 1;
    }
    if (outputs_bad(&probe, msg, sizeof msg)) {
        snprintf(why, n, "its %s", msg);
        return 1;
    }
    memcpy(data->w, probe.w, sizeof data->w);
    return 0;
}

/* ---------------------------------------------------------------- FMU state -------- */
static unsigned long long saved_checksum(const SavedState *saved) {
    return fnv1a((const unsigned char *)&saved->d, sizeof saved->d);
}

/* The instance's state into *state (a new one if *state is NULL, else overwritten). */
static int cf_get_state(Instance *c, void **state, const char *what) {
    SavedState *copy;
    if (!state) return CF_ERROR;
    copy = (SavedState *)*state;
    if (copy && copy->magic != SAVED_MAGIC)
        return fail(c, "%s: %s: the state given to overwrite is not one of this FMU's", c->name, what);
    if (!copy) {
        copy = (SavedState *)cf_host_alloc(c, sizeof *copy);
        if (!copy) return fail(c, "%s: %s: out of memory", c->name, what);
    }
    copy->magic = SAVED_MAGIC;
    copy->size = (unsigned)sizeof(ModelData);
    copy->d = c->d;
    copy->checksum = saved_checksum(copy);
    *state = copy;
    return CF_OK;
}

static int cf_set_state(Instance *c, const void *state, const char *what) {
    const SavedState *saved = (const SavedState *)state;
    ModelData data;
    char why[600];
    if (!state) return fail(c, "%s: %s: no state given", c->name, what);
    if (saved->magic != SAVED_MAGIC || saved->size != sizeof(ModelData)
        || saved->checksum != saved_checksum(saved))
        return fail(c, "%s: %s: the state is not one this FMU saved, or was "
                    "changed since (checksum); the instance is unchanged", c->name, what);
    data = saved->d;
    if (state_bad(&data, why, sizeof why))
        return fail(c, "%s: %s: refused, %s; the instance is unchanged", c->name, what, why);
    c->d = data;
    c->outputs_current = 0;
    c->terminated = c->has_discarded = 0;
    if (c->phase == ST_ERROR || c->phase == ST_TERMINATED) c->phase = ST_STEPPING;
    return CF_OK;
}

static int cf_free_state(Instance *c, void **state) {
    if (!state) return CF_ERROR;
    if (*state) cf_host_free(c, *state);
    *state = NULL;
    return CF_OK;
}

/* The serialized layout: StateHeader | ModelData | FNV-1a 64 of the bytes before it. */
#define SERIAL_SIZE (sizeof(StateHeader) + sizeof(ModelData) + 8)

static int cf_serialize(Instance *c, const void *state, unsigned char bytes[], size_t size,
                        const char *what) {
    const SavedState *saved = (const SavedState *)state;
    StateHeader head;
    unsigned long long sum;
    if (!state || !bytes) return CF_ERROR;
    if (size < SERIAL_SIZE)
        return fail(c, "%s: %s: %lu bytes given, %lu needed", c->name, what,
                     (unsigned long)size, (unsigned long)SERIAL_SIZE);
    if (saved->magic != SAVED_MAGIC || saved->checksum != saved_checksum(saved))
        return fail(c, "%s: %s: the state is not one this FMU saved, or was "
                    "changed since (checksum)", c->name, what);
    memset(&head, 0, sizeof head);
    head.magic = STATE_MAGIC;
    head.size = (unsigned)sizeof(ModelData);
    snprintf(head.guid, sizeof head.guid, "%s", MODEL_GUID);
    memcpy(bytes, &head, sizeof head);
    memcpy(bytes + sizeof head, &saved->d, sizeof(ModelData));
    sum = fnv1a((const unsigned char *)bytes, sizeof head + sizeof(ModelData));
    memcpy(bytes + sizeof head + sizeof(ModelData), &sum, 8);
    return CF_OK;
}

static int cf_deserialize(Instance *c, const unsigned char bytes[], size_t size, void **state,
                          const char *what) {
    StateHeader head;
    ModelData data;
    SavedState *copy;
    unsigned long long sum;
    char why[600];
    if (!bytes || !state) return CF_ERROR;
    if (size != SERIAL_SIZE)
        return fail(c, "%s: %s: %lu bytes are not a state of this FMU (%lu expected)",
                     c->name, what, (unsigned long)size, (unsigned long)SERIAL_SIZE);
    memcpy(&head, bytes, sizeof head);
    if (head.magic != STATE_MAGIC || head.size != sizeof(ModelData)
        || memchr(head.guid, '\0', sizeof head.guid) == NULL
        || strncmp(head.guid, MODEL_GUID, sizeof head.guid) != 0)
        return fail(c, "%s: %s: the bytes are not a state of this FMU (header)", c->name, what);
    memcpy(&sum, bytes + sizeof head + sizeof(ModelData), 8);
    if (sum != fnv1a((const unsigned char *)bytes, sizeof head + sizeof(ModelData)))
        return fail(c, "%s: %s: the state is corrupt (its FNV-1a checksum does not match its "
                    "bytes)", c->name, what);
    memcpy(&data, bytes + sizeof head, sizeof data);
    if (state_bad(&data, why, sizeof why))
        return fail(c, "%s: %s: refused, %s", c->name, what, why);
    if (*state && ((SavedState *)*state)->magic != SAVED_MAGIC)
        return fail(c, "%s: %s: the state given to overwrite is not one of this FMU's", c->name, what);
    copy = (SavedState *)*state;
    if (!copy) {
        copy = (SavedState *)cf_host_alloc(c, sizeof *copy);
        if (!copy) return fail(c, "%s: %s: out of memory", c->name, what);
    }
    copy->magic = SAVED_MAGIC;
    copy->size = (unsigned)sizeof(ModelData);
    copy->d = data;
    copy->checksum = saved_checksum(copy);
    *state = copy;
    return CF_OK;
}

#endif
