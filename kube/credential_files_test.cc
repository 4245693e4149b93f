#include "kube/credential_files.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace huygens::kube {
namespace {

namespace fs = std::filesystem;

class CredentialFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string Write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path.string();
  }
  fs::path dir_;
};

TEST_F(CredentialFilesTest, ARotatedTokenIsReadAtTheNextRequest) {
  RestConfig config;
  config.bearer_token_file = Write("token", "first\n");
  config.bearer_token = "first";
  CredentialFiles files(config);
  EXPECT_EQ(files.Current().bearer_token, "first");
  Write("token", "second-token\n");
  EXPECT_EQ(files.Current().bearer_token, "second-token");
  EXPECT_EQ(files.Current().bearer_token, "second-token");
}

TEST_F(CredentialFilesTest, ATokenSwappedInThroughASymlinkAsKubeletProjectsItIsRead) {
  // kubelet's atomic writer: ..data -> a timestamped folder, token -> ..data/token.
  fs::create_directories(dir_ / "v1");
  fs::create_directories(dir_ / "v2");
  Write("v1/token", "old");
  Write("v2/token", "new");
  fs::create_directory_symlink("v1", dir_ / "..data");
  fs::create_symlink("..data/token", dir_ / "token");
  RestConfig config;
  config.bearer_token_file = (dir_ / "token").string();
  config.bearer_token = "old";
  CredentialFiles files(config);
  EXPECT_EQ(files.Current().bearer_token, "old");
  fs::create_directory_symlink("v2", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  EXPECT_EQ(files.Current().bearer_token, "new");
}

TEST_F(CredentialFilesTest, AMissingOrEmptyTokenFileKeepsTheLastToken) {
  RestConfig config;
  config.bearer_token_file = Write("token", "first");
  config.bearer_token = "first";
  CredentialFiles files(config);
  fs::remove(config.bearer_token_file);
  EXPECT_EQ(files.Current().bearer_token, "first");
  Write("token", "");
  EXPECT_EQ(files.Current().bearer_token, "first");
  Write("token", "third");
  EXPECT_EQ(files.Current().bearer_token, "third");
}

TEST_F(CredentialFilesTest, ARotatedClientCertificateIsReadWithItsKey) {
  RestConfig config;
  config.client_certificate_file = Write("tls.crt", "CERT-1");
  config.client_key_file = Write("tls.key", "KEY-1");
  config.client_certificate_pem = "CERT-1";
  config.client_key_pem = "KEY-1";
  CredentialFiles files(config);
  EXPECT_EQ(files.Current().client_certificate_pem, "CERT-1");
  Write("tls.crt", "CERT-2-longer");
  Write("tls.key", "KEY-2-longer");
  const Credentials now = files.Current();
  EXPECT_EQ(now.client_certificate_pem, "CERT-2-longer");
  EXPECT_EQ(now.client_key_pem, "KEY-2-longer");
}

TEST_F(CredentialFilesTest, InlineCredentialsAreKeptAsGiven) {
  RestConfig config;
  config.bearer_token = "inline";
  CredentialFiles files(config);
  EXPECT_EQ(files.Current().bearer_token, "inline");
}

}  // namespace
}  // namespace huygens::kube
