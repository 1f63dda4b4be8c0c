#include "modelfiles/hdf5_file.h"

#include <hdf5.h>

#include <cstring>
#include <mutex>
#include <type_traits>

namespace ringtrain::modelfiles {
namespace {

static_assert(std::is_same_v<hid_t, int64_t>, "H5File keeps an hid_t in an int64_t");

// HDF5's serial build is not thread-safe: one call into it at a time, process-wide.
std::recursive_mutex& Hdf5Mutex() {
  static std::recursive_mutex m;
  return m;
}

// Takes the library lock and silences HDF5's own error printing to stderr: every failure
// becomes a Status here instead.
class Hdf5Lock {
 public:
  Hdf5Lock() : lock_(Hdf5Mutex()) {
    static const bool quiet = [] {
      H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
      return true;
    }();
    (void)quiet;
  }

 private:
  std::lock_guard<std::recursive_mutex> lock_;
};

// Closes an HDF5 identifier with the close function of its kind.
class Id {
 public:
  explicit Id(hid_t id = -1) : id_(id) {}
  ~Id() { reset(); }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  void reset() {
    if (id_ < 0) return;
    switch (H5Iget_type(id_)) {
      case H5I_FILE: H5Fclose(id_); break;
      case H5I_GROUP: H5Gclose(id_); break;
      case H5I_DATASET: H5Dclose(id_); break;
      case H5I_DATATYPE: H5Tclose(id_); break;
      case H5I_DATASPACE: H5Sclose(id_); break;
      case H5I_ATTR: H5Aclose(id_); break;
      case H5I_GENPROP_LST: H5Pclose(id_); break;
      default: H5Idec_ref(id_); break;
    }
    id_ = -1;
  }
  hid_t release() {
    hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_;
};

std::string RootPath(const std::string& path) { return path.empty() ? "/" : path; }

// Whether every prefix of `path` is a link that exists (H5Lexists needs each parent).
bool LinkExists(hid_t file, const std::string& path) {
  if (path.empty() || path == "/") return true;
  size_t pos = 0;
  while (true) {
    size_t slash = path.find('/', pos);
    std::string prefix = path.substr(0, slash);
    if (!prefix.empty() && H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    pos = slash + 1;
  }
}

H5I_type_t KindAt(hid_t file, const std::string& path) {
  if (!LinkExists(file, path)) return H5I_BADID;
  Id obj(H5Oopen(file, RootPath(path).c_str(), H5P_DEFAULT));
  if (!obj.ok()) return H5I_BADID;
  return H5Iget_type(obj.get());
}

}  // namespace

StatusOr<std::unique_ptr<H5File>> H5File::OpenPath(const std::string& path, const std::string& what) {
  Hdf5Lock lock;
  if (H5Fis_hdf5(path.c_str()) <= 0) return DataLossError(what + " is not an HDF5 file");
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return DataLossError(what + " could not be opened as an HDF5 file (truncated or corrupt)");
  return std::unique_ptr<H5File>(new H5File(f, what));
}

StatusOr<std::unique_ptr<H5File>> H5File::OpenImage(const std::string& bytes, const std::string& what) {
  Hdf5Lock lock;
  if (bytes.compare(0, 8, kHdf5Magic, 8) != 0) return DataLossError(what + " is not an HDF5 file");
  Id fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.ok() || H5Pset_fapl_core(fapl.get(), 1 << 20, /*backing_store=*/0) < 0 ||
      H5Pset_file_image(fapl.get(), const_cast<char*>(bytes.data()), bytes.size()) < 0) {
    return InternalError("cannot set up HDF5 to read " + what + " from memory");
  }
  hid_t f = H5Fopen(what.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0) return DataLossError(what + " could not be opened as an HDF5 file (truncated or corrupt)");
  return std::unique_ptr<H5File>(new H5File(f, what));
}

StatusOr<std::unique_ptr<H5File>> H5File::CreateInMemory(const std::string& what) {
  Hdf5Lock lock;
  Id fapl(H5Pcreate(H5P_FILE_ACCESS));
  if (!fapl.ok() || H5Pset_fapl_core(fapl.get(), 1 << 20, /*backing_store=*/0) < 0) {
    return InternalError("cannot set up HDF5 to build " + what + " in memory");
  }
  hid_t f = H5Fcreate(what.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
  if (f < 0) return InternalError("cannot create " + what + " in memory");
  return std::unique_ptr<H5File>(new H5File(f, what));
}

H5File::~H5File() {
  Hdf5Lock lock;
  H5Fclose(file_);
}

bool H5File::Exists(const std::string& path) const {
  Hdf5Lock lock;
  return KindAt(file_, path) != H5I_BADID;
}

bool H5File::IsGroup(const std::string& path) const {
  Hdf5Lock lock;
  return KindAt(file_, path) == H5I_GROUP;
}

bool H5File::IsDataset(const std::string& path) const {
  Hdf5Lock lock;
  return KindAt(file_, path) == H5I_DATASET;
}

bool H5File::HasAttribute(const std::string& path, const std::string& name) const {
  Hdf5Lock lock;
  if (KindAt(file_, path) == H5I_BADID) return false;
  return H5Aexists_by_name(file_, RootPath(path).c_str(), name.c_str(), H5P_DEFAULT) > 0;
}

StatusOr<std::vector<std::string>> H5File::ReadStrings(const std::string& path, const std::string& name) const {
  Hdf5Lock lock;
  const std::string where = "attribute '" + name + "' of '" + RootPath(path) + "' in " + what_;
  if (KindAt(file_, path) == H5I_BADID ||
      H5Aexists_by_name(file_, RootPath(path).c_str(), name.c_str(), H5P_DEFAULT) <= 0) {
    return DataLossError(where + " is missing");
  }
  Id attr(H5Aopen_by_name(file_, RootPath(path).c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  Id type(attr.ok() ? H5Aget_type(attr.get()) : -1);
  Id space(attr.ok() ? H5Aget_space(attr.get()) : -1);
  if (!type.ok() || !space.ok()) return DataLossError(where + " cannot be read");
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0 || n > (1 << 24)) return DataLossError(where + " has an unreadable number of strings");
  std::vector<std::string> out;
  // An empty list: Keras writes np.asarray([]), a float64 array of no elements.
  if (n == 0) return out;
  if (H5Tget_class(type.get()) != H5T_STRING) return DataLossError(where + " is not a string");
  Id mem(H5Tcopy(H5T_C_S1));
  H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Tset_size(mem.get(), H5T_VARIABLE);
    std::vector<char*> ptrs(static_cast<size_t>(n), nullptr);
    if (H5Aread(attr.get(), mem.get(), ptrs.data()) < 0) return DataLossError(where + " cannot be read");
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
  } else {
    const size_t size = H5Tget_size(type.get());
    if (size == 0 || size > (1 << 20)) return DataLossError(where + " has strings of an unreadable size");
    H5Tset_size(mem.get(), size);
    H5Tset_strpad(mem.get(), H5T_STR_NULLPAD);
    std::vector<char> buf(static_cast<size_t>(n) * size);
    if (H5Aread(attr.get(), mem.get(), buf.data()) < 0) return DataLossError(where + " cannot be read");
    for (hssize_t i = 0; i < n; ++i) {
      const char* s = buf.data() + i * size;
      out.emplace_back(s, strnlen(s, size));
    }
  }
  return out;
}

StatusOr<std::vector<std::string>> H5File::Members(const std::string& path) const {
  Hdf5Lock lock;
  if (KindAt(file_, path) != H5I_GROUP) return DataLossError("group '" + RootPath(path) + "' is missing in " + what_);
  Id group(H5Gopen2(file_, RootPath(path).c_str(), H5P_DEFAULT));
  H5G_info_t info;
  if (!group.ok() || H5Gget_info(group.get(), &info) < 0) {
    return DataLossError("group '" + RootPath(path) + "' of " + what_ + " cannot be read");
  }
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t len = H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) return DataLossError("group '" + RootPath(path) + "' of " + what_ + " cannot be listed");
    std::string name(static_cast<size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(group.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<size_t>(len));
    names.push_back(std::move(name));
  }
  return names;
}

StatusOr<checkpoint::Tensor> H5File::ReadFloats(const std::string& path, uint64_t* budget) const {
  Hdf5Lock lock;
  const std::string where = "dataset '" + path + "' in " + what_;
  if (KindAt(file_, path) != H5I_DATASET) return DataLossError(where + " is missing");
  Id ds(H5Dopen2(file_, path.c_str(), H5P_DEFAULT));
  Id type(ds.ok() ? H5Dget_type(ds.get()) : -1);
  Id space(ds.ok() ? H5Dget_space(ds.get()) : -1);
  if (!type.ok() || !space.ok()) return DataLossError(where + " cannot be read");
  const H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) {
    return DataLossError(where + " does not hold numbers (HDF5 type class " + std::to_string(cls) + ")");
  }
  if (H5Aexists(ds.get(), "dtype") > 0) {
    return DataLossError(where + " holds bfloat16 values, which ringtrain does not read: save the weights as "
                                 "float32");
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > H5S_MAX_RANK) return DataLossError(where + " has an unreadable shape");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  checkpoint::Tensor t;
  uint64_t count = 1;
  for (hsize_t d : dims) {
    t.shape.push_back(static_cast<int64_t>(d));
    if (d != 0 && count > *budget / d) {
      return DataLossError(where + " declares more values than the file can hold; the file is corrupt");
    }
    count *= d;
  }
  if (count > *budget) return DataLossError(where + " declares more values than the file can hold; the file is corrupt");
  t.data.resize(static_cast<size_t>(count));
  if (count > 0 && H5Dread(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.data.data()) < 0) {
    return DataLossError(where + " cannot be read (truncated or corrupt)");
  }
  *budget -= count;
  return t;
}

Status H5File::CreateGroup(const std::string& path) {
  Hdf5Lock lock;
  if (KindAt(file_, path) == H5I_GROUP) return Status::Ok();
  Id lcpl(H5Pcreate(H5P_LINK_CREATE));
  Id gcpl(H5Pcreate(H5P_GROUP_CREATE));
  // No modification times: equal inputs make equal bytes.
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  H5Pset_obj_track_times(gcpl.get(), 0);
  Id g(H5Gcreate2(file_, path.c_str(), lcpl.get(), gcpl.get(), H5P_DEFAULT));
  if (!g.ok()) return InternalError("cannot create group '" + path + "' in " + what_);
  return Status::Ok();
}

Status H5File::WriteFloats(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  Hdf5Lock lock;
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Id space(dims.empty() ? H5Screate(H5S_SCALAR) : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_obj_track_times(dcpl.get(), 0);
  Id ds(H5Dcreate2(file_, path.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
  if (!ds.ok()) return InternalError("cannot create dataset '" + path + "' in " + what_);
  uint64_t count = 1;
  for (int64_t d : shape) count *= static_cast<uint64_t>(d);
  if (count > 0 && H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    return InternalError("cannot write dataset '" + path + "' in " + what_);
  }
  return Status::Ok();
}

StatusOr<std::string> H5File::Image() {
  Hdf5Lock lock;
  if (H5Fflush(file_, H5F_SCOPE_GLOBAL) < 0) return InternalError("cannot flush " + what_);
  const ssize_t size = H5Fget_file_image(file_, nullptr, 0);
  if (size < 0) return InternalError("cannot take the image of " + what_);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (H5Fget_file_image(file_, bytes.data(), bytes.size()) != size) {
    return InternalError("cannot take the image of " + what_);
  }
  return bytes;
}

}  // namespace ringtrain::modelfiles
