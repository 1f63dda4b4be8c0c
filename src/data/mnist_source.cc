#include "data/mnist_source.h"

#include <string>

#include "data/idx_file.h"

namespace ringtrain::data {

StatusOr<RawExamples> LoadMnistFiles(const SourceSpec& spec, const std::vector<int64_t>& files) {
  RawExamples out;
  std::string first_field;  // the images field that fixed rows x cols
  for (int64_t j : files) {
    const std::string& ipath = spec.images[j];
    const std::string& lpath = spec.labels[j];
    RT_ASSIGN_OR_RETURN(std::string ibytes, ReadMaybeGzipped(ipath, spec.image_fields[j], kIdxImagesMagic));
    RT_ASSIGN_OR_RETURN(IdxImages images, ParseIdxImages(ibytes, ipath));
    ibytes = std::string();  // release before reading the next file
    RT_ASSIGN_OR_RETURN(std::string lbytes, ReadMaybeGzipped(lpath, spec.label_fields[j], kIdxLabelsMagic));
    RT_ASSIGN_OR_RETURN(IdxLabels labels, ParseIdxLabels(lbytes, lpath));
    if (labels.labels.size() != images.count) {
      return DataLossError("'" + lpath + "' holds " + std::to_string(labels.labels.size()) + " labels but '" +
                           ipath + "' holds " + std::to_string(images.count) +
                           " images; are they from the same set (" + spec.label_fields[j] + " vs " +
                           spec.image_fields[j] + ")?")
          .About(Subject::kData);
    }
    for (size_t i = 0; i < labels.labels.size(); ++i) {
      if (labels.labels[i] >= kMnistClasses) {
        return DataLossError("'" + lpath + "': label " + std::to_string(labels.labels[i]) + " of example " +
                             std::to_string(i) + " is not a digit 0-9; the file is corrupt or not MNIST")
            .About(Subject::kData);
      }
    }
    if (first_field.empty()) {
      out.rows = images.rows;
      out.cols = images.cols;
      first_field = spec.image_fields[j];
    } else if (images.rows != out.rows || images.cols != out.cols) {
      return InvalidArgumentError(spec.image_fields[j] + ": '" + ipath + "' holds " + std::to_string(images.rows) +
                                  "x" + std::to_string(images.cols) + " images but " + first_field + " holds " +
                                  std::to_string(out.rows) + "x" + std::to_string(out.cols) +
                                  "; all files of a source must have the same image size")
          .About(Subject::kData);
    }
    out.pixels.insert(out.pixels.end(), images.pixels.begin(), images.pixels.end());
    out.labels.insert(out.labels.end(), labels.labels.begin(), labels.labels.end());
  }
  return out;
}

}  // namespace ringtrain::data
