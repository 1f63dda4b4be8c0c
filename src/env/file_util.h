// What ringtrain builds on an Env: crash-safe whole-file writes and recursive deletes.
// Written once here for every output file (saved model, checkpoints, backups, history).
//
// Blocking: on the Env's file system. Threading: any thread; two threads of one process
// must not write the same path at once (they would share the temporary name).
#pragma once

#include <string>

#include "common/status.h"
#include "env/env.h"

namespace ringtrain::env {

// The temporary file WriteFileAtomically writes before renaming it onto `path`:
// "<path>.tmp.<pid>". Readers ignore such files; the backup writer removes strays.
std::string TemporaryPathFor(const std::string& path);
// Whether a file name has that form (".tmp." followed by digits at its end).
bool IsTemporaryName(const std::string& name);

// Crash-safe write (LevelDB's CURRENT-file commit): creates missing parent directories,
// writes TemporaryPathFor(path), fsyncs it, closes it, renames it onto `path`, fsyncs
// the directory. Whatever fails, an existing file at `path` is either untouched or
// wholly replaced, and the temporary file is removed (unless removing it fails too, as
// after a crash: the next backup writer removes it). Errors name the file and carry
// errno's text, and are tagged Subject::kStorage (exit code 6): what is written this way
// is one of ringtrain's output files.
Status WriteFileAtomically(Env* env, const std::string& path, const std::string& bytes);

// Deletes `dir` and everything under it (the non-chief's temporary save_model
// directory); symbolic links in it are removed, never followed. OK if it does not exist.
Status DeleteRecursively(Env* env, const std::string& dir);

}  // namespace ringtrain::env
