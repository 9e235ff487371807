// Layer stack of dlib_face_recognition_resnet_model_v1.dat: a ResNet with 29 convolutions, 150×150 RGB
// input and a 128-D metric output. A serialized dlib network only loads into exactly the type it was
// saved from, so this definition must not change while that model file is in use.
#include "face_network.hpp"

#include <dlib/dnn.h>

#include <map>
#include <mutex>

namespace faceengine {
namespace {

template <template <int, template <typename> class, int, typename> class Block, int Filters,
          template <typename> class Norm, typename Input>
using Residual = dlib::add_prev1<Block<Filters, Norm, 1, dlib::tag1<Input>>>;

// Halves the resolution; the shortcut is average-pooled to match.
template <template <int, template <typename> class, int, typename> class Block, int Filters,
          template <typename> class Norm, typename Input>
using ResidualDown =
    dlib::add_prev2<dlib::avg_pool<2, 2, 2, 2, dlib::skip1<dlib::tag2<Block<Filters, Norm, 2, dlib::tag1<Input>>>>>>;

template <int Filters, template <typename> class Norm, int Stride, typename Input>
using ConvPair =
    Norm<dlib::con<Filters, 3, 3, 1, 1, dlib::relu<Norm<dlib::con<Filters, 3, 3, Stride, Stride, Input>>>>>;

// Inference uses affine layers where training used batch normalisation.
template <int Filters, typename Input>
using Unit = dlib::relu<Residual<ConvPair, Filters, dlib::affine, Input>>;
template <int Filters, typename Input>
using UnitDown = dlib::relu<ResidualDown<ConvPair, Filters, dlib::affine, Input>>;

template <typename Input> using Stage256Top = UnitDown<256, Input>;
template <typename Input> using Stage256 = Unit<256, Unit<256, UnitDown<256, Input>>>;
template <typename Input> using Stage128 = Unit<128, Unit<128, UnitDown<128, Input>>>;
template <typename Input> using Stage64 = Unit<64, Unit<64, Unit<64, UnitDown<64, Input>>>>;
template <typename Input> using Stage32 = Unit<32, Unit<32, Unit<32, Input>>>;

using DescriptorNet = dlib::loss_metric<dlib::fc_no_bias<128, dlib::avg_pool_everything<
    Stage256Top<Stage256<Stage128<Stage64<Stage32<
    dlib::max_pool<3, 3, 2, 2, dlib::relu<dlib::affine<dlib::con<32, 7, 7, 2, 2,
    dlib::input_rgb_image_sized<150>>>>>>>>>>>>>;

}  // namespace

struct FaceDescriptorNetwork::Network {
    DescriptorNet net;
};

// Each network runs on one thread (forward passes mutate its buffers), so engines cannot share one; they copy
// the weights of one read per file instead of parsing the 22 MB file again. The read copy stays for the process:
// one network's worth of memory more than its engines hold.
FaceDescriptorNetwork::FaceDescriptorNetwork(const std::string &modelPath) {
    static std::mutex mutex;
    static std::map<std::string, std::unique_ptr<const Network>> prototypes;
    std::lock_guard<std::mutex> lock(mutex);
    auto &prototype = prototypes[modelPath];
    if (!prototype) {
        std::unique_ptr<Network> loaded(new Network);
        dlib::deserialize(modelPath) >> loaded->net;
        prototype = std::move(loaded);
    }
    network_.reset(new Network(*prototype));
}

FaceDescriptorNetwork::~FaceDescriptorNetwork() = default;

std::vector<FaceDescriptor> FaceDescriptorNetwork::describe(const std::vector<FaceChip> &chips) {
    std::vector<FaceDescriptor> result;
    if (chips.empty()) return result;
    // Same call as dlib's face_recognition_model_v1 (mini-batches of 16).
    std::vector<dlib::matrix<float, 0, 1>> outputs = network_->net(chips, 16);
    result.reserve(outputs.size());
    for (const auto &output : outputs) {
        FaceDescriptor descriptor{};
        for (long i = 0; i < output.size() && i < static_cast<long>(descriptor.size()); ++i) descriptor[i] = output(i);
        result.push_back(descriptor);
    }
    return result;
}

}  // namespace faceengine
